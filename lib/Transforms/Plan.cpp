//===- Plan.cpp - the vram-plan pass: fit a function into a budget --------===//
//
// Plans the function with vram/Planning/IRPlanning.h (the chosen planner on
// the current op order and, with allow-reorder, on an order chosen for memory
// too)
// and writes the better plan back as IR.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Planning/IRPlanning.h"
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

namespace {
struct PlanPass : public vram::impl::PlanPassBase<PlanPass> {
  using PlanPassBase::PlanPassBase;

  /// Where print-plan writes; stdout when null.
  llvm::raw_ostream *planReport = nullptr;

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
    llvm::Expected<uint64_t> resolved = resolveBudget(budget, *profile);
    if (!resolved)
      return emitError(func.getLoc())
             << "budget: " << llvm::toString(resolved.takeError());
    uint64_t budgetBytes = *resolved;
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
    if (!best) {
      llvm::Error error = llvm::handleErrors(
          best.takeError(), [&](const UnmetBudgetError &unmet) {
            func->setAttr(VramDialect::kUnmetBudgetAttrName,
                          getUnmetBudgetAttr(func.getContext(), unmet));
            return llvm::make_error<UnmetBudgetError>(unmet);
          });
      return emitError(func.getLoc()) << llvm::toString(std::move(error));
    }
    PlanSummary summary = summarizePlan(best->planning, best->plan, budgetBytes,
                                        analysis.getPeakBytes(), *profile);
    if (printPlan)
      printPlanReport(planReport ? *planReport : llvm::outs(), func.getName(),
                      best->planning, best->plan, summary, *profile,
                      allowOffload);
    double overhead = best->plan.simulation.overhead();
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
    func->setAttr(VramDialect::kPlanAttrName,
                  getPlanSummaryAttr(func.getContext(), summary));
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

std::unique_ptr<Pass> vram::createPlanPass(const PlanPassOptions &options,
                                           llvm::raw_ostream &planReport) {
  auto pass = std::make_unique<PlanPass>(options);
  pass->planReport = &planReport;
  return pass;
}
