//===- Plan.cpp - the vram-plan pass: fit a function into a budget --------===//
//
// Plans the function with vram/Planning/IRPlanning.h (the chosen planner on
// the current op order and, with allow-reorder, on a memory-greedy order too)
// and writes the better plan back as IR.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "vram-plan"

namespace vram {
#define GEN_PASS_DEF_PLANPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

/// The `vram.plan` summary of `plan` for reports.
static DictionaryAttr summarizePlan(MLIRContext *context,
                                    const IRPlanningGraph &planning,
                                    const planner::Plan &plan,
                                    uint64_t unplannedPeak,
                                    StringRef deviceName) {
  const planner::PlanningGraph &graph = planning.graph;
  int64_t recomputations = 0, hostArguments = 0;
  int64_t offloadedBytes = 0, hostArgumentBytes = 0;
  for (auto [t, decision] : llvm::enumerate(plan.decisions)) {
    recomputations += decision.recomputeSteps.size();
    if (decision.inHostMemory) {
      ++hostArguments;
      hostArgumentBytes += graph.tensor(t).bytes;
    }
  }
  for (const planner::PlanStep &step : plan.steps)
    if (step.kind == planner::StepKind::Offload)
      offloadedBytes += graph.tensor(step.id).bytes;
  const planner::SimulationResult &sim = plan.simulation;
  Builder builder(context);
  auto i64 = [&](StringRef name, int64_t value) {
    return builder.getNamedAttr(name, builder.getI64IntegerAttr(value));
  };
  auto f64 = [&](StringRef name, double value) {
    return builder.getNamedAttr(name, builder.getF64FloatAttr(value));
  };
  return builder.getDictionaryAttr(
      {i64("unplanned_peak", unplannedPeak), i64("recomputations", recomputations),
       i64("offloaded_bytes", offloadedBytes),
       i64("host_arguments", hostArguments),
       i64("host_argument_bytes", hostArgumentBytes),
       f64("compute_seconds", sim.baselineTime),
       f64("recompute_seconds", sim.recomputeTime),
       f64("exposed_copy_seconds", sim.exposedTransferTime),
       builder.getNamedAttr("device", builder.getStringAttr(deviceName))});
}

namespace {
struct PlanPass : public vram::impl::PlanPassBase<PlanPass> {
  using PlanPassBase::PlanPassBase;

  void runOnOperation() override {
    // Collected first: planning rewrites function bodies.
    SmallVector<FunctionOpInterface> funcs;
    getOperation()->walk([&](FunctionOpInterface func) {
      if (!func.isExternal())
        funcs.push_back(func);
    });
    for (FunctionOpInterface func : funcs)
      if (failed(planFunction(func)))
        signalPassFailure();
  }

  LogicalResult planFunction(FunctionOpInterface func) {
    llvm::Expected<const DeviceProfile &> found = requireDeviceProfile(device);
    if (!found)
      return emitError(func.getLoc()) << llvm::toString(found.takeError());
    const DeviceProfile *profile = &*found;
    uint64_t budgetBytes = usableBytes(*profile);
    if (!budget.empty()) {
      llvm::Expected<uint64_t> parsed = parseByteSize(budget);
      if (!parsed)
        return emitError(func.getLoc())
               << "budget: " << llvm::toString(parsed.takeError());
      budgetBytes = *parsed;
    }
    if (llvm::Error error = checkPlannerName(planner))
      return emitError(func.getLoc()) << llvm::toString(std::move(error));
    // A second plan over copies and clones would plan the plan: tensors that
    // are already host copies have no place in the graph.
    WalkResult alreadyPlanned = func.walk([](Operation *op) {
      return isa<OffloadOp, PrefetchOp>(op) ||
                     op->hasAttr(VramDialect::kRecomputeAttrName)
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (alreadyPlanned.wasInterrupted())
      return emitError(func.getLoc())
             << "function is already planned (it has vram ops); plan the "
                "function before planning";

    MemoryAnalysis analysis(func);
    if (!analysis.isValid()) {
      emitAnalysisErrors(analysis, func);
      return failure();
    }
    Block &body = func.getFunctionBody().front();
    FunctionPlanOptions options;
    options.budget = budgetBytes;
    options.planner = planner;
    options.allowOffload = allowOffload;
    options.allowReorder = allowReorder;
    options.maxOverhead = maxOverhead;
    llvm::Expected<FunctionPlan> best =
        planFunctionBody(analysis, body, *profile, options);
    if (!best)
      return emitError(func.getLoc()) << llvm::toString(best.takeError());
    if (printPlan)
      printPlanReport(llvm::outs(), func.getName(), best->planning,
                      best->plan, *profile, budgetBytes, allowOffload);
    double overhead = best->plan.simulation.overhead();
    DictionaryAttr summary =
        summarizePlan(func.getContext(), best->planning, best->plan,
                      analysis.getPeakBytes(), profile->name);
    AppliedPlanStats applied = applyPlan(body, best->planning, best->plan);
    recomputedOps += applied.recomputedOps;
    offloads += applied.offloads;
    offloadedBytes += applied.offloadedBytes;
    overheadPermille += static_cast<uint64_t>(overhead * 1000 + 0.5);

    // The mark is what the memory analysis measures on the planned IR: the
    // number --vram-verify-plan checks.
    MemoryAnalysis planned(func);
    if (!planned.isValid()) {
      emitAnalysisErrors(planned, func);
      return failure();
    }
    Builder builder(func.getContext());
    func->setAttr(VramDialect::kBudgetAttrName,
                  builder.getI64IntegerAttr(budgetBytes));
    func->setAttr(VramDialect::kPlannedPeakAttrName,
                  builder.getI64IntegerAttr(planned.getPeakBytes()));
    func->setAttr(VramDialect::kPlanAttrName, summary);
    // The planner's graph is the analysis' buffers, so its simulation and
    // the rewritten IR agree to the byte; a difference is a bug in one.
    if (planned.getPeakBytes() != best->plan.simulation.peakBytes)
      return emitError(func.getLoc())
             << "internal error: the planned IR peaks at "
             << formatBudget(planned.getPeakBytes()) << ", the planner's "
             << "simulation at "
             << formatBudget(best->plan.simulation.peakBytes);
    return success();
  }
};
} // namespace
