//===- MaxBatch.h - the largest batch that fits a budget --------*- C++ -*-===//

#ifndef VRAM_ANALYSIS_MAXBATCH_H
#define VRAM_ANALYSIS_MAXBATCH_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>

namespace vram {

struct LargestBatch {
  /// The largest batch that fits; 0 when not even batch 1 does.
  int64_t batch = 0;
  /// The smallest batch that does not fit; 0 when the search stopped at its
  /// maximum with everything fitting.
  int64_t firstFailingBatch = 0;
  /// How many batch sizes were tried.
  unsigned evaluations = 0;
};

/// Finds the largest batch in [1, maxBatch] for which `fits` holds, by
/// doubling then bisection: O(log maxBatch) calls. `fits` must be monotone
/// (true up to some batch, false after). Fails when `fits` fails.
mlir::FailureOr<LargestBatch>
findLargestBatch(llvm::function_ref<mlir::FailureOr<bool>(int64_t)> fits,
                 int64_t maxBatch = int64_t(1) << 40);

struct MaxBatchResult {
  /// The largest batch whose peak fits; 0 when not even batch 1 does.
  int64_t batch = 0;
  /// Peak bytes at `batch` (at batch 1 when batch is 0).
  uint64_t peakBytes = 0;
  /// The smallest batch that does not fit and its peak; batch 0 when the
  /// search stopped at `maxBatch` with everything fitting.
  int64_t firstFailingBatch = 0;
  uint64_t firstFailingPeakBytes = 0;
  /// How many batch sizes were analysed.
  unsigned evaluations = 0;
};

/// Finds the largest batch in [1, maxBatch] with peakAt(batch) <= budget, by
/// doubling then bisection: O(log maxBatch) analyses, no execution. The peak
/// must not decrease as the batch grows, which holds when every tensor's size
/// is non-decreasing in the batch dimension. Fails when peakAt fails.
mlir::FailureOr<MaxBatchResult>
findMaxBatch(llvm::function_ref<mlir::FailureOr<uint64_t>(int64_t)> peakAt,
             uint64_t budget, int64_t maxBatch = int64_t(1) << 40);

} // namespace vram

#endif // VRAM_ANALYSIS_MAXBATCH_H
