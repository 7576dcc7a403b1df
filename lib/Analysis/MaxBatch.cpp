//===- MaxBatch.cpp - the largest batch that fits a budget ----------------===//

#include "vram/Analysis/MaxBatch.h"

using namespace mlir;

namespace vram {

FailureOr<MaxBatchResult>
findMaxBatch(llvm::function_ref<FailureOr<uint64_t>(int64_t)> peakAt,
             uint64_t budget, int64_t maxBatch) {
  MaxBatchResult result;
  auto evaluate = [&](int64_t batch) -> FailureOr<uint64_t> {
    ++result.evaluations;
    return peakAt(batch);
  };
  FailureOr<uint64_t> first = evaluate(1);
  if (failed(first))
    return failure();
  if (*first > budget) {
    result.peakBytes = *first;
    result.firstFailingBatch = 1;
    result.firstFailingPeakBytes = *first;
    return result;
  }
  // Invariant: `fits` fits, `fails` (when non-zero) does not.
  int64_t fits = 1, fails = 0;
  uint64_t fitsPeak = *first, failsPeak = 0;
  auto probe = [&](int64_t batch) -> LogicalResult {
    FailureOr<uint64_t> peak = evaluate(batch);
    if (failed(peak))
      return failure();
    if (*peak <= budget) {
      fits = batch;
      fitsPeak = *peak;
    } else {
      fails = batch;
      failsPeak = *peak;
    }
    return success();
  };
  while (fails == 0 && fits < maxBatch)
    if (failed(probe(fits > maxBatch / 2 ? maxBatch : fits * 2)))
      return failure();
  while (fails != 0 && fails - fits > 1)
    if (failed(probe(fits + (fails - fits) / 2)))
      return failure();
  result.batch = fits;
  result.peakBytes = fitsPeak;
  result.firstFailingBatch = fails;
  result.firstFailingPeakBytes = failsPeak;
  return result;
}

} // namespace vram
