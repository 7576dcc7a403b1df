//===- Replay.h - the schedule replay the planners build on -----*- C++ -*-===//
//
// Private to lib/Planner: the engine of Replay.cpp, which the baselines and
// the fast planner (ReplayPlanners.cpp) run with different options.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PLANNER_REPLAY_H
#define VRAM_LIB_PLANNER_REPLAY_H

#include "vram/Planner/Planners.h"

#include <optional>
#include <vector>

namespace vram::planner {

/// How the eviction key prices a tensor whose rebuild reruns more ops than
/// its walk visits (32).
enum class LongRebuilds {
  /// The ops walked only: every long rebuild costs about the same.
  CostTheWalk,
  /// The ops walked and the producers waiting on the walk's worklist. With
  /// fan-in of about 31 (random layered graphs of 5,000 ops) the walk stops
  /// two levels down, and a deep rebuild cone looked no dearer than a
  /// shallow one.
  CostTheFrontier,
  /// Not recomputed at all (offloading stays possible). A rebuild through a
  /// long ancestry holds the inputs of every op on its path; near the
  /// smallest budgets on graphs of wide fan-in (random layered graphs) that
  /// evicts what the same rebuild needs next, and it never ends.
  Refuse,
};

struct ReplayOptions {
  /// Evict to stay within this many bytes; no eviction when empty.
  std::optional<uint64_t> budget;
  /// Indexed by OpId (empty: none). Tensors freed right after the op's
  /// first run and rebuilt at their next use (Chen's non-checkpoints, or
  /// drops chosen ahead by selectDrops).
  std::vector<llvm::SmallVector<TensorId, 1>> dropAfter;
  /// Indexed by OpId (empty: none). Tensors rebuilt right before the op
  /// runs although it does not read them: a drop whose rerun goes where its
  /// producer's inputs are still resident, ahead of the tensor's next use.
  std::vector<llvm::SmallVector<TensorId, 1>> rebuildBefore;
  /// Indexed by TensorId (empty: the graph's lastOpNeeding). The last op
  /// until which a tensor stays once dead, because a rebuild may read it.
  std::vector<int64_t> keepUntil;
  /// When set: filled, by TensorId, with what each tensor's first eviction
  /// weighed (the report's "why").
  std::vector<std::optional<EvictionCost>> *evictionCosts = nullptr;
  /// What the eviction key makes of a rebuild longer than its walk.
  LongRebuilds longRebuilds = LongRebuilds::CostTheWalk;
  /// Indexed by TensorId (empty: none). Persistent tensors the caller keeps
  /// in host memory: brought in before each use like offloaded tensors, and
  /// copied back once written.
  std::vector<bool> startOnHost;
};

/// Replays the graph's schedule under `options`: before each op its missing
/// inputs are prefetched or recomputed, and tensors are evicted to stay
/// within the budget. Returns the step program, or a plain error when the
/// budget cannot be met.
llvm::Expected<std::vector<PlanStep>> replay(const PlanningGraph &graph,
                                             const MachineModel &device,
                                             ReplayOptions options);

} // namespace vram::planner

#endif // VRAM_LIB_PLANNER_REPLAY_H
