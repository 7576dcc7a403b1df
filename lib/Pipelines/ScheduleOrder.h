//===- ScheduleOrder.h - what the tensor-level rewrites may move ---------===//
//
// Private to lib/Pipelines. The op order of a function is its schedule,
// which a memory plan chose (vram-plan); a rewrite that computes a value
// somewhere else moves its buffer's live range, and its inputs'.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PIPELINES_SCHEDULEORDER_H
#define VRAM_LIB_PIPELINES_SCHEDULEORDER_H

#include "mlir/IR/Operation.h"

namespace vram {

/// Whether `later` runs right after `earlier` in the same block: nothing in
/// between computes (a linalg op) or touches memory (a plan's copies, an
/// allocation). Merging the two then moves no work and no buffer's live
/// range across anything the schedule placed between them. Gives up after
/// a few ops, where the answer is seldom yes.
bool runsRightAfter(mlir::Operation *earlier, mlir::Operation *later);

} // namespace vram

#endif // VRAM_LIB_PIPELINES_SCHEDULEORDER_H
