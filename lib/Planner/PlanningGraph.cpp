//===- PlanningGraph.cpp - Construction and checks of planning graphs -----===//

#include "vram/Planner/PlanningGraph.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace vram::planner;

OpId PlanningGraph::addOp(llvm::StringRef name, double cost, bool isBackward) {
  PlanOp op;
  op.name = name.str();
  op.cost = cost;
  op.isBackward = isBackward;
  opList.push_back(std::move(op));
  firstOverwriteAfter.push_back(std::numeric_limits<OpId>::max());
  return opList.size() - 1;
}

TensorId PlanningGraph::addTensor(llvm::StringRef name, uint64_t bytes,
                                  TensorCategory category,
                                  std::optional<OpId> producer,
                                  bool recomputable, bool offloadable) {
  PlanTensor tensor;
  tensor.name = name.str();
  tensor.bytes = bytes;
  tensor.category = category;
  tensor.producer = producer;
  tensor.recomputable = recomputable;
  tensor.offloadable = offloadable;
  tensorList.push_back(std::move(tensor));
  TensorId id = tensorList.size() - 1;
  if (producer)
    opList[*producer].outputs.push_back(id);
  return id;
}

void PlanningGraph::addUse(OpId consumer, TensorId tensor) {
  auto &consumers = tensorList[tensor].consumers;
  auto it = llvm::lower_bound(consumers, consumer);
  if (it != consumers.end() && *it == consumer)
    return;
  consumers.insert(it, consumer);
  opList[consumer].inputs.push_back(tensor);
}

void PlanningGraph::addWrite(OpId writer, TensorId tensor) {
  // Readers scheduled earlier are all added: ops are added in order.
  for (OpId reader : tensorList[tensor].consumers)
    if (reader < writer)
      firstOverwriteAfter[reader] =
          std::min(firstOverwriteAfter[reader], writer);
  addUse(writer, tensor);
  if (llvm::is_contained(opList[writer].writes, tensor))
    return;
  opList[writer].writes.push_back(tensor);
  auto &writers = tensorList[tensor].writers;
  writers.insert(llvm::lower_bound(writers, writer), writer);
}

void PlanningGraph::setReusesStorageOf(TensorId tensor, TensorId input) {
  tensorList[tensor].reusesStorageOf = input;
  // The input's value ends there: a returned buffer (an all-reduced loss)
  // is returned as the new tensor.
  if (tensorList[input].category == TensorCategory::Output)
    tensorList[input].category = TensorCategory::Activation;
}

llvm::Error PlanningGraph::verify() const {
  for (auto [id, op] : llvm::enumerate(opList))
    if (!std::isfinite(op.cost) || op.cost < 0)
      return llvm::createStringError(
          llvm::formatv("op '{0}' has invalid cost {1}", op.name, op.cost));
  for (const PlanTensor &tensor : tensorList) {
    if (tensor.reusesStorageOf) {
      const PlanTensor &input = tensorList[*tensor.reusesStorageOf];
      if (!tensor.producer ||
          !llvm::is_contained(opList[*tensor.producer].inputs,
                              *tensor.reusesStorageOf) ||
          input.consumers.back() != *tensor.producer ||
          input.bytes != tensor.bytes)
        return llvm::createStringError(llvm::formatv(
            "'{0}' reuses the storage of '{1}', which is not an input of its "
            "producer of the same size read by nothing after it",
            tensor.name, input.name));
    }
    if (!tensor.producer || tensor.consumers.empty())
      continue;
    if (tensor.consumers.front() <= *tensor.producer)
      return llvm::createStringError(llvm::formatv(
          "schedule is not topological: op '{0}' reads '{1}' before or while "
          "op '{2}' produces it",
          opList[tensor.consumers.front()].name, tensor.name,
          opList[*tensor.producer].name));
  }
  return llvm::Error::success();
}

std::vector<int64_t> PlanningGraph::lastOpNeeding() const {
  // need[t]: the last op that may read t, directly or through a chain of
  // recomputations. Consumers come later in the schedule, so visiting
  // producers from last to first sees every consumer's outputs finished.
  std::vector<int64_t> need(tensorList.size(), -1);
  auto settle = [&](TensorId t) {
    const PlanTensor &tensor = tensorList[t];
    need[t] = tensor.consumers.empty()
                  ? (tensor.producer ? int64_t(*tensor.producer) : -1)
                  : int64_t(tensor.consumers.back());
    for (OpId consumer : tensor.consumers)
      for (TensorId derived : opList[consumer].outputs)
        if (canRecompute(derived))
          need[t] = std::max(need[t], need[derived]);
  };
  for (OpId op = opList.size(); op-- > 0;)
    for (TensorId t : opList[op].outputs)
      settle(t);
  for (auto [t, tensor] : llvm::enumerate(tensorList))
    if (!tensor.producer)
      settle(t);
  // Tensors that can be recomputed are rebuilt on demand instead.
  for (auto [t, tensor] : llvm::enumerate(tensorList))
    if (canRecompute(t))
      need[t] = tensor.consumers.empty() ? int64_t(*tensor.producer)
                                         : int64_t(tensor.consumers.back());
  return need;
}

double PlanningGraph::totalCost() const {
  double total = 0;
  for (const PlanOp &op : opList)
    total += op.cost;
  return total;
}

uint64_t PlanningGraph::persistentBytes() const {
  uint64_t bytes = 0;
  for (auto [t, tensor] : llvm::enumerate(tensorList))
    if (isPersistent(t))
      bytes += tensor.bytes;
  return bytes;
}

uint64_t PlanningGraph::bytesTouchedBy(OpId id) const {
  const PlanOp &op = opList[id];
  uint64_t bytes = 0;
  for (TensorId t : op.inputs)
    if (!isPersistent(t))
      bytes += tensorList[t].bytes;
  for (TensorId t : op.outputs)
    if (!isPersistent(t) && !tensorList[t].reusesStorageOf)
      bytes += tensorList[t].bytes;
  return bytes;
}
