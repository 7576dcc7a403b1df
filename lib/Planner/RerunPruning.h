//===- RerunPruning.h - reruns a plan does not need -------------*- C++ -*-===//
//
// Private to lib/Planner: takes back the recomputations of a recompute-only
// program that its budget does not need (RerunPruning.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_RERUNPRUNING_H
#define VRAM_LIB_PLANNER_RERUNPRUNING_H

#include "vram/Planner/Plan.h"

#include <optional>
#include <vector>

namespace vram::planner {

/// Whether `steps` is a sequence of op runs and frees: no copies, and no
/// persistent tensor kept in host memory (a free before the first run).
bool isRunSequence(llvm::ArrayRef<PlanStep> steps);

/// A program that runs `steps`' ops in their order less some reruns, each
/// tensor instance freed after its last read, within `budget`: the costliest
/// reruns first, each taken out, with the reruns that only fed it, where
/// what it made can stay from its earlier instance instead (and what the
/// reruns read can go sooner) without passing the budget. None when `steps`
/// moves tensors to or from host memory, or when no rerun can go.
std::optional<std::vector<PlanStep>> pruneReruns(const PlanningGraph &graph,
                                                 llvm::ArrayRef<PlanStep> steps,
                                                 uint64_t budget);

} // namespace vram::planner

#endif // VRAM_LIB_PLANNER_RERUNPRUNING_H
