//===- PlanReport.cpp - a plan as attributes and as text ------------------===//
//
// What a plan did, for the reports: the summary vram-plan leaves on the
// function (vram.plan, vram.unmet_budget) and reads back, and the text
// report of --print-plan, one line per tensor with the reason for its
// decision.
//
//===----------------------------------------------------------------------===//

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Support/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace vram {

/// " < ", " = " or " > ": how `a` compares with `b`.
static const char *comparison(double a, double b) {
  return a < b ? " < " : a > b ? " > " : " = ";
}

/// Why `t` was evicted the way it was, from what the planner weighed at its
/// first eviction: the cheaper option against the other one.
static void printEvictionReason(raw_ostream &os,
                                const planner::EvictionCost &cost,
                                const planner::PlanTensor &tensor,
                                bool offloaded, bool allowOffload) {
  bool canRecompute = !std::isinf(cost.recompute);
  bool canOffload = !std::isinf(cost.exposedCopy);
  if (offloaded) {
    if (cost.exposedCopy == 0) {
      os << "the copies hide behind " << formatSeconds(cost.untilNextUse)
         << " of compute";
      if (canRecompute)
        os << "; rebuilding would take " << formatSeconds(cost.recompute);
    } else {
      os << formatSeconds(cost.exposedCopy) << " exposed copy";
      if (canRecompute)
        os << comparison(cost.exposedCopy, cost.recompute)
           << formatSeconds(cost.recompute) << " to rebuild";
    }
    if (!canRecompute)
      os << " (it cannot be recomputed)";
    return;
  }
  os << formatSeconds(cost.recompute) << " to rebuild";
  if (canOffload)
    os << comparison(cost.recompute, cost.exposedCopy)
       << formatSeconds(cost.exposedCopy) << " exposed copy";
  else if (!tensor.offloadable)
    os << " (it cannot be offloaded)";
  else if (!allowOffload)
    os << " (offload disabled)";
  else
    // planFast keeps a recompute-only plan when it simulates faster.
    os << " (the recompute-only plan is faster overall)";
}

/// The decision of tensor `t` and the numbers behind it.
static void printDecision(raw_ostream &os, const IRPlanningGraph &planning,
                          const planner::Plan &plan, planner::TensorId t,
                          const DeviceProfile &device, bool allowOffload) {
  const planner::PlanningGraph &graph = planning.graph;
  const planner::PlanTensor &tensor = graph.tensor(t);
  const planner::TensorDecision &decision = plan.decisions[t];
  double recomputeSeconds = graph.op(*tensor.producer).cost;
  double roundTripSeconds =
      2 * estimateHostTransferSeconds(tensor.bytes, device);
  if (decision.isOffloaded()) {
    os << "offloaded " << decision.offloadSteps.size() << "x: ";
    if (decision.eviction)
      printEvictionReason(os, *decision.eviction, tensor, true, allowOffload);
    else
      os << "a round trip to host takes " << formatSeconds(roundTripSeconds)
         << ", rerunning its producer " << formatSeconds(recomputeSeconds);
    if (decision.isRecomputed())
      os << "; also recomputed " << decision.recomputeSteps.size() << "x";
  } else if (decision.isRecomputed()) {
    os << "recomputed " << decision.recomputeSteps.size() << "x: ";
    if (decision.eviction) {
      printEvictionReason(os, *decision.eviction, tensor, false, allowOffload);
      return;
    }
    os << "rerunning its producer takes " << formatSeconds(recomputeSeconds);
    if (allowOffload && tensor.offloadable)
      os << ", a round trip to host " << formatSeconds(roundTripSeconds);
    else if (!tensor.offloadable)
      os << " (it cannot be offloaded)";
    else
      os << " (offload disabled)";
  } else if (graph.mustStayResident(t)) {
    os << "kept: " << getCategoryKey(planning.categories[t])
       << " stays to the end";
  } else if (!tensor.recomputable && !tensor.offloadable) {
    os << "kept: it can be neither recomputed nor offloaded";
  } else {
    os << "kept: the budget allows it";
  }
}

PlanSummary summarizePlan(const IRPlanningGraph &planning,
                          const planner::Plan &plan, uint64_t budget,
                          uint64_t unplannedPeak, const DeviceProfile &device) {
  const planner::PlanningGraph &graph = planning.graph;
  const planner::SimulationResult &sim = plan.simulation;
  PlanSummary summary;
  summary.budget = budget;
  summary.plannedPeak = sim.peakBytes;
  summary.unplannedPeak = unplannedPeak;
  for (auto [t, decision] : llvm::enumerate(plan.decisions)) {
    summary.recomputations += decision.recomputeSteps.size();
    if (decision.inHostMemory) {
      ++summary.hostArguments;
      summary.hostArgumentBytes += graph.tensor(t).bytes;
    }
  }
  for (const planner::PlanStep &step : plan.steps)
    if (step.kind == planner::StepKind::Offload)
      summary.offloadedBytes += graph.tensor(step.id).bytes;
  summary.computeSeconds = sim.baselineTime;
  summary.recomputeSeconds = sim.recomputeTime;
  summary.exposedCopySeconds = sim.exposedTransferTime;
  summary.device = device.name;
  return summary;
}

/// `name = value : i64`, an entry of the dictionaries below.
static NamedAttribute namedI64(Builder &builder, StringRef name,
                               uint64_t value) {
  return builder.getNamedAttr(name, builder.getI64IntegerAttr(value));
}

// The vram.plan dictionary holds what vram.budget and vram.planned_peak do
// not; its keys are written and read here only.
DictionaryAttr getPlanSummaryAttr(MLIRContext *context,
                                  const PlanSummary &summary) {
  Builder builder(context);
  auto i64 = [&](StringRef name, uint64_t value) {
    return namedI64(builder, name, value);
  };
  auto f64 = [&](StringRef name, double value) {
    return builder.getNamedAttr(name, builder.getF64FloatAttr(value));
  };
  return builder.getDictionaryAttr(
      {i64("unplanned_peak", summary.unplannedPeak),
       i64("recomputations", summary.recomputations),
       i64("offloaded_bytes", summary.offloadedBytes),
       i64("host_arguments", summary.hostArguments),
       i64("host_argument_bytes", summary.hostArgumentBytes),
       f64("compute_seconds", summary.computeSeconds),
       f64("recompute_seconds", summary.recomputeSeconds),
       f64("exposed_copy_seconds", summary.exposedCopySeconds),
       builder.getNamedAttr("device", builder.getStringAttr(summary.device))});
}

DictionaryAttr getUnmetBudgetAttr(MLIRContext *context,
                                  const UnmetBudgetError &error) {
  Builder builder(context);
  return builder.getDictionaryAttr(
      {namedI64(builder, "budget", error.budget),
       namedI64(builder, "smallest_budget", error.smallestBudget),
       namedI64(builder, "floor", error.floorBytes),
       builder.getNamedAttr("floor_parts",
                            builder.getStringAttr(error.floorParts))});
}

std::optional<UnmetBudgetError> readUnmetBudget(Operation *func) {
  auto unmet =
      func->getAttrOfType<DictionaryAttr>(VramDialect::kUnmetBudgetAttrName);
  if (!unmet)
    return std::nullopt;
  auto budget = unmet.getAs<IntegerAttr>("budget");
  auto smallest = unmet.getAs<IntegerAttr>("smallest_budget");
  auto floor = unmet.getAs<IntegerAttr>("floor");
  auto parts = unmet.getAs<StringAttr>("floor_parts");
  if (!budget || !smallest || !floor || !parts)
    return std::nullopt;
  return UnmetBudgetError(budget.getValue().getZExtValue(),
                          smallest.getValue().getZExtValue(),
                          floor.getValue().getZExtValue(), parts.str());
}

std::optional<PlanSummary> readPlanSummary(Operation *func) {
  auto summary =
      func->getAttrOfType<DictionaryAttr>(VramDialect::kPlanAttrName);
  auto budget = func->getAttrOfType<IntegerAttr>(VramDialect::kBudgetAttrName);
  auto peak =
      func->getAttrOfType<IntegerAttr>(VramDialect::kPlannedPeakAttrName);
  if (!summary || !budget || !peak)
    return std::nullopt;
  auto i64 = [&](StringRef name) -> uint64_t {
    auto value = summary.getAs<IntegerAttr>(name);
    return value ? value.getValue().getZExtValue() : 0;
  };
  auto f64 = [&](StringRef name) {
    auto value = summary.getAs<FloatAttr>(name);
    return value ? value.getValueAsDouble() : 0.0;
  };
  PlanSummary plan;
  plan.budget = budget.getValue().getZExtValue();
  plan.plannedPeak = peak.getValue().getZExtValue();
  if (auto lowered =
          func->getAttrOfType<IntegerAttr>(VramDialect::kLoweredPeakAttrName))
    plan.loweredPeak = lowered.getValue().getZExtValue();
  plan.unplannedPeak = i64("unplanned_peak");
  plan.recomputations = i64("recomputations");
  plan.offloadedBytes = i64("offloaded_bytes");
  plan.hostArguments = i64("host_arguments");
  plan.hostArgumentBytes = i64("host_argument_bytes");
  plan.computeSeconds = f64("compute_seconds");
  plan.recomputeSeconds = f64("recompute_seconds");
  plan.exposedCopySeconds = f64("exposed_copy_seconds");
  if (auto device = summary.getAs<StringAttr>("device"))
    plan.device = device.str();
  return plan;
}

void printPlanReport(raw_ostream &os, StringRef functionName,
                     const IRPlanningGraph &planning, const planner::Plan &plan,
                     const PlanSummary &summary, const DeviceProfile &device,
                     bool allowOffload, unsigned layerDepth) {
  const planner::PlanningGraph &graph = planning.graph;
  os << "plan @" << functionName << ": " << formatPlanSummary(summary) << "\n";
  // Arguments the caller keeps in host memory (ZeRO-Offload style): each
  // comes in before its uses and, once written, goes back.
  if (summary.hostArguments > 0) {
    os << "  arguments in host memory:\n";
    for (auto [t, decision] : llvm::enumerate(plan.decisions)) {
      if (!decision.inHostMemory)
        continue;
      os << "    " << graph.tensor(t).name << ": "
         << formatExactBytes(graph.tensor(t).bytes) << " B "
         << getCategoryKey(planning.categories[t]) << ", brought in "
         << decision.prefetchSteps.size() << "x";
      if (!decision.offloadSteps.empty())
        os << ", written back " << decision.offloadSteps.size() << "x";
      os << "\n";
    }
  }

  // Layers in the order of their first tensor; a tensor counts in the
  // column of what happens to it (offloaded before recomputed: an offloaded
  // tensor's recomputation is a fallback the line below shows).
  struct LayerTotals {
    uint64_t kept = 0, recomputed = 0, offloaded = 0;
    SmallVector<planner::TensorId> tensors;
  };
  llvm::MapVector<std::string, LayerTotals, std::map<std::string, unsigned>>
      layers;
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (!tensor.producer || !planning.values[t])
      continue;
    LayerTotals &layer =
        layers[getLayerName(planning.ops[*tensor.producer], layerDepth)];
    const planner::TensorDecision &decision = plan.decisions[t];
    (decision.isOffloaded()    ? layer.offloaded
     : decision.isRecomputed() ? layer.recomputed
                               : layer.kept) += tensor.bytes;
    layer.tensors.push_back(t);
  }
  for (auto &[name, layer] : layers) {
    os << "  layer " << name << ": kept " << formatExactBytes(layer.kept)
       << " B, recomputed " << formatExactBytes(layer.recomputed)
       << " B, offloaded " << formatExactBytes(layer.offloaded) << " B\n";
    for (planner::TensorId t : layer.tensors) {
      const planner::PlanTensor &tensor = graph.tensor(t);
      os << "    " << tensor.name << ": " << formatExactBytes(tensor.bytes)
         << " B " << getCategoryKey(planning.categories[t]) << ", ";
      printDecision(os, planning, plan, t, device, allowOffload);
      os << "\n";
    }
  }
}

} // namespace vram
