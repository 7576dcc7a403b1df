//===- Schedule.cpp - List scheduling for memory --------------------------===//

#include "vram/Planner/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <set>

using namespace vram::planner;

namespace {
/// Which ready op a list schedule runs next.
enum class Pick {
  /// The one that grows live bytes least.
  LeastGrowth,
  /// One that shrinks live bytes, the most first; otherwise the first in
  /// the given order.
  ShrinkingFirst,
};
} // namespace

static std::vector<unsigned> listSchedule(const OrderingProblem &problem,
                                          Pick pick) {
  size_t numOps = problem.predecessors.size();
  std::vector<unsigned> pendingReaders(problem.bufferBytes.size(), 0);
  for (const auto &reads : problem.reads)
    for (unsigned buffer : reads)
      ++pendingReaders[buffer];
  std::vector<unsigned> waitingFor(numOps);
  std::vector<llvm::SmallVector<unsigned, 2>> successors(numOps);
  for (auto [op, predecessors] : llvm::enumerate(problem.predecessors)) {
    waitingFor[op] = predecessors.size();
    for (unsigned predecessor : predecessors)
      successors[predecessor].push_back(op);
  }
  std::set<unsigned> ready;
  for (unsigned op = 0; op < numOps; ++op)
    if (waitingFor[op] == 0)
      ready.insert(op);

  std::vector<unsigned> order;
  order.reserve(numOps);
  while (!ready.empty()) {
    std::optional<unsigned> best;
    int64_t bestGrowth = 0;
    for (unsigned op : ready) {
      int64_t growth = problem.allocatedBytes[op];
      for (unsigned buffer : problem.reads[op])
        if (pendingReaders[buffer] == 1 && problem.freedAfterLastRead[buffer])
          growth -= problem.bufferBytes[buffer];
      if (pick == Pick::ShrinkingFirst)
        growth = std::min<int64_t>(growth, 0);
      if (!best || growth < bestGrowth) {
        best = op;
        bestGrowth = growth;
      }
    }
    ready.erase(*best);
    order.push_back(*best);
    for (unsigned buffer : problem.reads[*best])
      --pendingReaders[buffer];
    for (unsigned successor : successors[*best])
      if (--waitingFor[successor] == 0)
        ready.insert(successor);
  }
  return order;
}

/// The peak of the bytes ops allocate, over `order`, each buffer freed after
/// its last read where it may be. Buffers no op allocates only shift it.
static int64_t allocatedPeak(const OrderingProblem &problem,
                             llvm::ArrayRef<unsigned> order) {
  std::vector<unsigned> pendingReaders(problem.bufferBytes.size(), 0);
  for (const auto &reads : problem.reads)
    for (unsigned buffer : reads)
      ++pendingReaders[buffer];
  int64_t live = 0, peak = 0;
  for (unsigned op : order) {
    live += problem.allocatedBytes[op];
    peak = std::max(peak, live);
    for (unsigned buffer : problem.reads[op])
      if (--pendingReaders[buffer] == 0 && problem.freedAfterLastRead[buffer])
        live -= problem.bufferBytes[buffer];
  }
  return peak;
}

std::vector<unsigned>
vram::planner::orderForMemory(const OrderingProblem &problem) {
  std::vector<unsigned> shrinkingFirst =
      listSchedule(problem, Pick::ShrinkingFirst);
  std::vector<unsigned> leastGrowth = listSchedule(problem, Pick::LeastGrowth);
  return allocatedPeak(problem, leastGrowth) <
                 allocatedPeak(problem, shrinkingFirst)
             ? leastGrowth
             : shrinkingFirst;
}

std::vector<OpId> vram::planner::orderForMemory(const PlanningGraph &graph) {
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
  return orderForMemory(problem);
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
