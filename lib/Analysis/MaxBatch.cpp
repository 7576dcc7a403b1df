//===- MaxBatch.cpp - the largest batch that fits a budget ----------------===//

#include "vram/Analysis/MaxBatch.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace vram {

FailureOr<LargestBatch>
findLargestBatch(llvm::function_ref<FailureOr<bool>(int64_t)> fits,
                 int64_t maxBatch) {
  LargestBatch result;
  auto evaluate = [&](int64_t batch) -> FailureOr<bool> {
    ++result.evaluations;
    return fits(batch);
  };
  FailureOr<bool> first = evaluate(1);
  if (failed(first))
    return failure();
  if (!*first) {
    result.firstFailingBatch = 1;
    return result;
  }
  // Invariant: `good` fits, `bad` (when non-zero) does not.
  int64_t good = 1, bad = 0;
  auto probe = [&](int64_t batch) -> LogicalResult {
    FailureOr<bool> ok = evaluate(batch);
    if (failed(ok))
      return failure();
    (*ok ? good : bad) = batch;
    return success();
  };
  while (bad == 0 && good < maxBatch)
    if (failed(probe(good > maxBatch / 2 ? maxBatch : good * 2)))
      return failure();
  while (bad != 0 && bad - good > 1)
    if (failed(probe(good + (bad - good) / 2)))
      return failure();
  result.batch = good;
  result.firstFailingBatch = bad;
  return result;
}

FailureOr<MaxBatchResult>
findMaxBatch(llvm::function_ref<FailureOr<uint64_t>(int64_t)> peakAt,
             uint64_t budget, int64_t maxBatch) {
  llvm::DenseMap<int64_t, uint64_t> peaks;
  FailureOr<LargestBatch> found = findLargestBatch(
      [&](int64_t batch) -> FailureOr<bool> {
        FailureOr<uint64_t> peak = peakAt(batch);
        if (failed(peak))
          return failure();
        peaks[batch] = *peak;
        return *peak <= budget;
      },
      maxBatch);
  if (failed(found))
    return failure();
  MaxBatchResult result;
  result.batch = found->batch;
  // At batch 0 (nothing fits) the report shows batch 1's peak.
  result.peakBytes = peaks.lookup(std::max<int64_t>(found->batch, 1));
  result.firstFailingBatch = found->firstFailingBatch;
  result.firstFailingPeakBytes = peaks.lookup(found->firstFailingBatch);
  result.evaluations = found->evaluations;
  return result;
}

} // namespace vram
