//===- RunGraph.h - a recompute-only program as a graph of its own -*- C++
//-*-===//
//
// Private to lib/Planner: lets the fast planner plan a planned program again
// (RunGraph.cpp, docs/planner.md "Planning the planned program").
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_RUNGRAPH_H
#define VRAM_LIB_PLANNER_RUNGRAPH_H

#include "vram/Planner/Plan.h"

#include <vector>

namespace vram::planner {

/// The op runs of a program, each an op of `graph` of its own: a rerun is a
/// new op that makes new tensors (instances), read by the runs that read
/// that instance. Tensors that exist before the program are shared.
struct RunGraph {
  PlanningGraph graph;
  /// By op of `graph`: the op of the original graph it runs.
  std::vector<OpId> originalOp;
};

/// `runs` (ops of `graph`, every input made by an earlier run or present
/// from the start) as a RunGraph whose schedule is `runs`. The instances
/// that the runs at the indices `keptRuns` make cannot be recomputed there:
/// a plan of the run graph keeps them between their uses.
RunGraph buildRunGraph(const PlanningGraph &graph, llvm::ArrayRef<OpId> runs,
                       llvm::ArrayRef<size_t> keptRuns = {});

/// A recompute-only program of `runGraph.graph` as a program of the
/// original graph: the same op runs, each instance freed after its last
/// read. It never takes more memory than the program it comes from (a read
/// finds the latest instance of its tensor, so an older one goes sooner)
/// and costs the same. None when `steps` moves tensors to or from host
/// memory.
std::optional<std::vector<PlanStep>>
mapToOriginal(const PlanningGraph &graph, const RunGraph &runGraph,
              llvm::ArrayRef<PlanStep> steps);

} // namespace vram::planner

#endif // VRAM_LIB_PLANNER_RUNGRAPH_H
