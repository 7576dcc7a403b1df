//===- RunGraph.cpp - a recompute-only program as a graph of its own ------===//

#include "RunGraph.h"

using namespace vram::planner;

RunGraph vram::planner::buildRunGraph(const PlanningGraph &graph,
                                      llvm::ArrayRef<OpId> runs,
                                      llvm::ArrayRef<size_t> keptRuns) {
  RunGraph result;
  PlanningGraph &runGraph = result.graph;
  // By tensor of `graph`: the instance the next reader finds.
  std::vector<TensorId> instance(graph.numTensors());
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    if (!tensor.producer) {
      TensorId shared = runGraph.addTensor(
          tensor.name, tensor.bytes, tensor.category, std::nullopt,
          tensor.recomputable, tensor.offloadable);
      instance[t] = shared;
    }
  for (auto [index, op] : llvm::enumerate(runs)) {
    const PlanOp &original = graph.op(op);
    bool kept = llvm::is_contained(keptRuns, index);
    OpId run =
        runGraph.addOp(original.name, original.cost, original.isBackward);
    result.originalOp.push_back(op);
    for (TensorId input : original.inputs) {
      if (llvm::is_contained(original.writes, input))
        runGraph.addWrite(run, instance[input]);
      else
        runGraph.addUse(run, instance[input]);
    }
    for (TensorId output : original.outputs) {
      const PlanTensor &tensor = graph.tensor(output);
      TensorId made =
          runGraph.addTensor(tensor.name, tensor.bytes, tensor.category, run,
                             tensor.recomputable && !kept, tensor.offloadable);
      if (tensor.reusesStorageOf)
        runGraph.setReusesStorageOf(made, instance[*tensor.reusesStorageOf]);
      instance[output] = made;
    }
  }
  return result;
}

std::optional<std::vector<PlanStep>>
vram::planner::mapToOriginal(const PlanningGraph &graph,
                             const RunGraph &runGraph,
                             llvm::ArrayRef<PlanStep> steps) {
  std::vector<OpId> runs;
  for (const PlanStep &step : steps) {
    if (step.kind == StepKind::Offload || step.kind == StepKind::Prefetch)
      return std::nullopt;
    if (step.kind == StepKind::Compute)
      runs.push_back(runGraph.originalOp[step.id]);
  }
  return insertFrees(graph, runs);
}
