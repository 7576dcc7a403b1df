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
  while (fails == 0 && fits < maxBatch) {
    int64_t next = fits > maxBatch / 2 ? maxBatch : fits * 2;
    FailureOr<uint64_t> peak = evaluate(next);
    if (failed(peak))
      return failure();
    if (*peak <= budget) {
      fits = next;
      fitsPeak = *peak;
    } else {
      fails = next;
      failsPeak = *peak;
    }
  }
  while (fails != 0 && fails - fits > 1) {
    int64_t middle = fits + (fails - fits) / 2;
    FailureOr<uint64_t> peak = evaluate(middle);
    if (failed(peak))
      return failure();
    if (*peak <= budget) {
      fits = middle;
      fitsPeak = *peak;
    } else {
      fails = middle;
      failsPeak = *peak;
    }
  }
  result.batch = fits;
  result.peakBytes = fitsPeak;
  result.firstFailingBatch = fails;
  result.firstFailingPeakBytes = failsPeak;
  return result;
}

} // namespace vram
