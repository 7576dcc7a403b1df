//===- RebuildCeiling.h - The rebuild-from-nothing plan ---------*- C++ -*-===//
//
// Private to lib/Planner: the plan behind recomputeOnlyCeiling (Planners.h),
// as a program where it is short enough to run.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_REBUILDCEILING_H
#define VRAM_LIB_PLANNER_REBUILDCEILING_H

#include "vram/Planner/Planners.h"

namespace vram::planner {

/// The op runs of the plan recomputeOnlyCeiling describes: before each op's
/// first run, the inputs it reads that are not held, each rebuilt from
/// nothing in turn (recursively, depth first). Freed after their last read
/// (insertFrees), they peak at the ceiling. None where recomputeOnlyCeiling
/// is none or the plan runs more than `maxRuns` ops.
std::optional<std::vector<OpId>>
rebuildFromNothingRuns(const PlanningGraph &graph, size_t maxRuns);

} // namespace vram::planner

#endif // VRAM_LIB_PLANNER_REBUILDCEILING_H
