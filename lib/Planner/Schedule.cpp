//===- Schedule.cpp - List scheduling for memory --------------------------===//

#include "vram/Planner/Schedule.h"
#include "vram/Planner/Planners.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <set>

using namespace vram::planner;

namespace {
/// Which ready op a list schedule runs next.
enum class Pick {
  /// The one that grows live bytes least.
  LeastGrowth,
  /// One that starts a chain shrinking live bytes, the most first; then one
  /// that leaves them as they are; otherwise the first in the given order.
  ShrinkingFirst,
};

/// A list schedule in progress: which ops are ready and which buffers are
/// still to be read.
class ListScheduler {
public:
  explicit ListScheduler(const OrderingProblem &problem);
  std::vector<unsigned> run(Pick pick);

private:
  /// Bytes live after `op` runs minus before: what it allocates, less what
  /// it reads for the last time.
  int64_t growth(unsigned op) const;
  /// The lowest growth reached by running `op` and then, while there is
  /// one, the op that only waits for the one before (a cast of a gradient,
  /// then its optimizer update), a few ops deep.
  int64_t chainGrowth(unsigned op);
  /// ShrinkingFirst's rank of a ready op, lowest first: a chain that shrinks
  /// live bytes by its growth; then an op that depends on no other and
  /// leaves them as they are (Adam's step count, which every update reads);
  /// then the rest alike, in the given order.
  int64_t shrinkingKey(unsigned op);
  void markRun(unsigned op);

  const OrderingProblem &problem;
  std::vector<unsigned> pendingReaders;
  std::vector<unsigned> waitingFor;
  std::vector<llvm::SmallVector<unsigned, 2>> successors;
  std::set<unsigned> ready;
};
} // namespace

ListScheduler::ListScheduler(const OrderingProblem &problem)
    : problem(problem), pendingReaders(problem.bufferBytes.size(), 0),
      waitingFor(problem.predecessors.size()),
      successors(problem.predecessors.size()) {
  for (const auto &reads : problem.reads)
    for (unsigned buffer : reads)
      ++pendingReaders[buffer];
  for (auto [op, predecessors] : llvm::enumerate(problem.predecessors)) {
    waitingFor[op] = predecessors.size();
    for (unsigned predecessor : predecessors)
      successors[predecessor].push_back(op);
  }
  for (unsigned op = 0; op < waitingFor.size(); ++op)
    if (waitingFor[op] == 0)
      ready.insert(op);
}

int64_t ListScheduler::growth(unsigned op) const {
  int64_t growth = problem.allocatedBytes[op];
  for (unsigned buffer : problem.reads[op])
    if (pendingReaders[buffer] == 1 && problem.freedAfterLastRead[buffer])
      growth -= problem.bufferBytes[buffer];
  return growth;
}

int64_t ListScheduler::chainGrowth(unsigned op) {
  constexpr unsigned kMaxChain = 4;
  int64_t total = 0, lowest = INT64_MAX;
  llvm::SmallVector<unsigned, kMaxChain> chain;
  for (unsigned depth = 0; depth < kMaxChain; ++depth) {
    total += growth(op);
    lowest = std::min(lowest, total);
    chain.push_back(op);
    for (unsigned buffer : problem.reads[op])
      --pendingReaders[buffer];
    if (successors[op].size() != 1 || waitingFor[successors[op][0]] != 1)
      break;
    op = successors[op][0];
  }
  for (unsigned run : chain)
    for (unsigned buffer : problem.reads[run])
      ++pendingReaders[buffer];
  return lowest;
}

int64_t ListScheduler::shrinkingKey(unsigned op) {
  if (int64_t chain = chainGrowth(op); chain < 0)
    return chain;
  return problem.predecessors[op].empty() && growth(op) == 0 ? 0 : 1;
}

void ListScheduler::markRun(unsigned op) {
  ready.erase(op);
  for (unsigned buffer : problem.reads[op])
    --pendingReaders[buffer];
  for (unsigned successor : successors[op])
    if (--waitingFor[successor] == 0)
      ready.insert(successor);
}

std::vector<unsigned> ListScheduler::run(Pick pick) {
  std::vector<unsigned> order;
  order.reserve(waitingFor.size());
  while (!ready.empty()) {
    std::optional<unsigned> best;
    int64_t bestKey = 0;
    for (unsigned op : ready) {
      int64_t key = pick == Pick::LeastGrowth ? growth(op) : shrinkingKey(op);
      if (!best || key < bestKey) {
        best = op;
        bestKey = key;
      }
    }
    order.push_back(*best);
    markRun(*best);
  }
  return order;
}

std::vector<std::vector<unsigned>>
vram::planner::ordersForMemory(const OrderingProblem &problem) {
  std::vector<std::vector<unsigned>> orders;
  for (Pick pick : {Pick::ShrinkingFirst, Pick::LeastGrowth}) {
    std::vector<unsigned> order = ListScheduler(problem).run(pick);
    if (!llvm::is_contained(orders, order))
      orders.push_back(std::move(order));
  }
  return orders;
}

std::vector<std::vector<OpId>>
vram::planner::ordersForMemory(const PlanningGraph &graph) {
  OrderingProblem problem(graph.numOps());
  // A tensor made in an input's storage is that input's buffer: reading it
  // keeps the storage live. As in the unplanned schedule, every buffer but
  // those of persistent tensors and outputs is freed after its last read.
  std::vector<TensorId> storage(graph.numTensors());
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    storage[t] =
        tensor.reusesStorageOf ? storage[*tensor.reusesStorageOf] : TensorId(t);
    problem.bufferBytes.push_back(tensor.bytes);
    problem.freedAfterLastRead.push_back(true);
  }
  for (TensorId t = 0; t < graph.numTensors(); ++t)
    if (graph.mustStayResident(t))
      problem.freedAfterLastRead[storage[t]] = false;
  for (auto [id, op] : llvm::enumerate(graph.ops())) {
    for (TensorId input : op.inputs) {
      problem.addRead(id, storage[input]);
      if (std::optional<OpId> producer = graph.tensor(input).producer)
        problem.addPredecessor(id, *producer);
    }
    for (TensorId output : op.outputs) {
      if (!graph.tensor(output).reusesStorageOf)
        problem.allocatedBytes[id] += graph.tensor(output).bytes;
      // Nothing reads it: freed once its producer has run.
      if (graph.tensor(output).consumers.empty())
        problem.addRead(id, storage[output]);
    }
    // In-place writes order the readers of the tensor around the writer as
    // the schedule has them.
    for (TensorId written : op.writes)
      for (OpId reader : graph.tensor(written).consumers) {
        if (reader < id)
          problem.addPredecessor(id, reader);
        else
          problem.addPredecessor(reader, id);
      }
  }
  return ordersForMemory(problem);
}

std::vector<OpId> vram::planner::orderForMemory(const PlanningGraph &graph) {
  // The given order competes: a list schedule's one-step choices can cost
  // more than they save.
  std::vector<OpId> best(graph.numOps());
  for (OpId op = 0; op < graph.numOps(); ++op)
    best[op] = op;
  uint64_t bestPeak = unplannedPeak(graph);
  for (std::vector<unsigned> &order : ordersForMemory(graph))
    if (uint64_t peak = unplannedPeak(reorderGraph(graph, order));
        peak < bestPeak) {
      best = std::move(order);
      bestPeak = peak;
    }
  return best;
}

PlanningGraph vram::planner::reorderGraph(const PlanningGraph &graph,
                                          llvm::ArrayRef<OpId> order) {
  std::vector<OpId> newId(graph.numOps());
  PlanningGraph result;
  for (OpId old : order) {
    const PlanOp &op = graph.op(old);
    newId[old] = result.addOp(op.name, op.cost, op.isBackward);
  }
  for (const PlanTensor &tensor : graph.tensors()) {
    std::optional<OpId> producer;
    if (tensor.producer)
      producer = newId[*tensor.producer];
    result.addTensor(tensor.name, tensor.bytes, tensor.category, producer,
                     tensor.recomputable, tensor.offloadable);
  }
  // Uses and writes in the new order: addWrite needs every earlier reader
  // added before it.
  for (OpId old : order) {
    const PlanOp &op = graph.op(old);
    for (TensorId input : op.inputs) {
      if (llvm::is_contained(op.writes, input))
        result.addWrite(newId[old], input);
      else
        result.addUse(newId[old], input);
    }
  }
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    if (tensor.reusesStorageOf)
      result.setReusesStorageOf(t, *tensor.reusesStorageOf);
  return result;
}
