//===- RebuildCeiling.cpp - A budget some recompute-only plan meets -------===//
//
// memoryFloor says no plan goes below a budget; this says some plan goes
// below another, so that between the two a planner's "no plan" is known to
// be its own failure or not. The witness is the plan with the least memory
// that is easy to reason about: every op's first run (in schedule order)
// rebuilds the inputs it needs from nothing, depth first, and afterwards
// only what must stay is kept. Its reruns grow exponentially with depth, so
// the program itself is only built when it is short.
//
//===----------------------------------------------------------------------===//

#include "RebuildCeiling.h"

#include <algorithm>

using namespace vram::planner;

namespace {
/// The rebuild-from-nothing plan of a graph: per op, the most live bytes
/// it needs besides what is held, and the order it rebuilds its inputs in.
class RebuildFromNothing {
public:
  explicit RebuildFromNothing(const PlanningGraph &graph) : graph(graph) {}

  /// False for a graph where the plan is not valid: a tensor in another's
  /// storage, or one that cannot be recomputed and need not stay.
  bool analyse();

  uint64_t ceiling() const { return peak; }

  /// The plan's op runs, or none past `maxRuns`.
  std::optional<std::vector<OpId>> runs(size_t maxRuns) const;

private:
  /// Held throughout: what has no producer (arguments, inputs) and the
  /// graph outputs made so far.
  bool isHeld(TensorId t) const {
    return !graph.tensor(t).producer || graph.mustStayResident(t);
  }
  OpId producerOf(TensorId t) const { return *graph.tensor(t).producer; }
  bool appendRebuild(OpId op, size_t maxRuns, std::vector<OpId> &runList) const;

  const PlanningGraph &graph;
  std::vector<uint64_t> needOf;
  std::vector<llvm::SmallVector<TensorId>> rebuildOrder;
  uint64_t peak = 0;
};
} // namespace

bool RebuildFromNothing::analyse() {
  uint64_t arguments = 0;
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (!tensor.producer)
      arguments += tensor.bytes;
    else if (tensor.reusesStorageOf ||
             (!graph.canRecompute(t) && !graph.mustStayResident(t)))
      return false;
  }
  // The inputs are rebuilt one after another, each kept while the next is
  // rebuilt, in the order that needs the least: those needing more beyond
  // their own bytes first (Sethi and Ullman's order for trees, which a
  // rebuild that remembers nothing is).
  needOf.assign(graph.numOps(), 0);
  rebuildOrder.assign(graph.numOps(), {});
  uint64_t heldOutputs = 0;
  peak = arguments;
  for (OpId op = 0; op < graph.numOps(); ++op) {
    const PlanOp &planOp = graph.op(op);
    llvm::SmallVector<TensorId> &order = rebuildOrder[op];
    for (TensorId t : planOp.inputs)
      if (!isHeld(t) && !llvm::is_contained(order, t))
        order.push_back(t);
    auto needBeyondBytes = [&](TensorId t) {
      return int64_t(needOf[producerOf(t)]) - int64_t(graph.tensor(t).bytes);
    };
    llvm::stable_sort(order, [&](TensorId a, TensorId b) {
      return needBeyondBytes(a) > needBeyondBytes(b);
    });
    uint64_t kept = 0, need = 0;
    for (TensorId t : order) {
      need = std::max(need, kept + needOf[producerOf(t)]);
      kept += graph.tensor(t).bytes;
    }
    // The run itself: the inputs gathered and every output allocated (a
    // graph output made again counts twice while the rerun runs).
    for (TensorId t : planOp.outputs)
      kept += graph.tensor(t).bytes;
    needOf[op] = std::max(need, kept);
    peak = std::max(peak, arguments + heldOutputs + needOf[op]);
    for (TensorId t : planOp.outputs)
      if (graph.mustStayResident(t))
        heldOutputs += graph.tensor(t).bytes;
  }
  return true;
}

bool RebuildFromNothing::appendRebuild(OpId op, size_t maxRuns,
                                       std::vector<OpId> &runList) const {
  for (TensorId t : rebuildOrder[op])
    if (!appendRebuild(producerOf(t), maxRuns, runList))
      return false;
  if (runList.size() == maxRuns)
    return false;
  runList.push_back(op);
  return true;
}

std::optional<std::vector<OpId>>
RebuildFromNothing::runs(size_t maxRuns) const {
  std::vector<OpId> runList;
  for (OpId op = 0; op < graph.numOps(); ++op)
    if (!appendRebuild(op, maxRuns, runList))
      return std::nullopt;
  return runList;
}

std::optional<uint64_t>
vram::planner::recomputeOnlyCeiling(const PlanningGraph &graph) {
  RebuildFromNothing plan(graph);
  if (!plan.analyse())
    return std::nullopt;
  return plan.ceiling();
}

std::optional<std::vector<OpId>>
vram::planner::rebuildFromNothingRuns(const PlanningGraph &graph,
                                      size_t maxRuns) {
  RebuildFromNothing plan(graph);
  if (!plan.analyse())
    return std::nullopt;
  return plan.runs(maxRuns);
}
