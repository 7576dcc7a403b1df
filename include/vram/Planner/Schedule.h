//===- Schedule.h - Choosing the order ops run in, for memory -------------===//
//
// Before anything is recomputed or offloaded, the order of independent ops
// decides the peak: a branch finished before the next starts frees its
// tensors sooner. The list scheduler here is shared by the planner's graphs
// and the IR (lib/Planning builds the same problem from a function body).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNER_SCHEDULE_H
#define VRAM_PLANNER_SCHEDULE_H

#include "vram/Planner/PlanningGraph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace vram::planner {

/// What ordering needs to know: per op, the ops it must follow, the buffers
/// it reads and the bytes it allocates; per buffer, its bytes and whether
/// its last reader frees it (not an argument, a constant or an output).
struct OrderingProblem {
  explicit OrderingProblem(size_t numOps)
      : predecessors(numOps), reads(numOps), allocatedBytes(numOps, 0) {}

  /// `op` runs after `predecessor`; repeats and self-edges are dropped.
  void addPredecessor(unsigned op, unsigned predecessor) {
    if (op != predecessor && !llvm::is_contained(predecessors[op], predecessor))
      predecessors[op].push_back(predecessor);
  }
  /// `op` reads `buffer`; repeats are dropped.
  void addRead(unsigned op, unsigned buffer) {
    if (!llvm::is_contained(reads[op], buffer))
      reads[op].push_back(buffer);
  }

  std::vector<llvm::SmallVector<unsigned, 4>> predecessors;
  /// A buffer nothing reads counts as read by the op that makes it: that op
  /// frees it.
  std::vector<llvm::SmallVector<unsigned, 4>> reads;
  std::vector<uint64_t> allocatedBytes;
  std::vector<uint64_t> bufferBytes;
  std::vector<bool> freedAfterLastRead;
};

/// Topological orders that keep live bytes low, from two list schedules
/// (without repeats). Among the ops whose predecessors have run, one runs
/// the op that grows live bytes least (its allocations minus the buffers it
/// reads for the last time); the other keeps the given order but first runs
/// an op that starts a chain of ops shrinking live bytes (a gradient's cast
/// and its optimizer update, right after the gradient), then ops that leave
/// them as they are. Ties go to the first in the given order, so an order
/// that is already good is kept.
std::vector<std::vector<unsigned>>
ordersForMemory(const OrderingProblem &problem);

/// ordersForMemory's orders of a planning graph's ops. Dependences are
/// through tensors, and an op that overwrites a tensor in place runs after
/// every reader of the value it overwrites (and before the readers of the
/// new one).
std::vector<std::vector<OpId>> ordersForMemory(const PlanningGraph &graph);

/// Of the given order and ordersForMemory's on a planning graph, the one
/// with the lowest unplanned peak.
std::vector<OpId> orderForMemory(const PlanningGraph &graph);

/// `graph` with its ops in `order`, a topological order of its ops.
PlanningGraph reorderGraph(const PlanningGraph &graph,
                           llvm::ArrayRef<OpId> order);

} // namespace vram::planner

#endif // VRAM_PLANNER_SCHEDULE_H
