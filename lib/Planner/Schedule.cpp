//===- Schedule.cpp - Memory-greedy list scheduling -----------------------===//

#include "vram/Planner/Schedule.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <set>

using namespace vram::planner;

std::vector<unsigned>
vram::planner::orderForMemory(const OrderingProblem &problem) {
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

std::vector<OpId> vram::planner::orderForMemory(const PlanningGraph &graph) {
  OrderingProblem problem(graph.numOps());
  // As in the unplanned schedule, everything but persistent tensors and
  // outputs is freed after its last read.
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    problem.bufferBytes.push_back(tensor.bytes);
    problem.freedAfterLastRead.push_back(!graph.mustStayResident(t));
  }
  for (auto [id, op] : llvm::enumerate(graph.ops())) {
    for (TensorId input : op.inputs) {
      problem.addRead(id, input);
      if (std::optional<OpId> producer = graph.tensor(input).producer)
        problem.addPredecessor(id, *producer);
    }
    for (TensorId output : op.outputs)
      if (!graph.tensor(output).reusesStorageOf)
        problem.allocatedBytes[id] += graph.tensor(output).bytes;
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
