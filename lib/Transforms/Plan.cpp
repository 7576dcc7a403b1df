//===- Plan.cpp - the vram-plan pass: fit a function into a budget --------===//
//
// Builds the planner's graph from the function (vram/Planning/IRPlanning.h),
// runs the chosen planner on the current op order and, with allow-reorder, on
// a memory-greedy order too, and writes the better plan back as IR.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Planner/Planners.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "vram-plan"

namespace vram {
#define GEN_PASS_DEF_PLANPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

/// `1,234 bytes (1.21 KiB)`.
static std::string formatBudget(uint64_t bytes) {
  return formatExactBytes(bytes) + " bytes (" + formatBinaryBytes(bytes) + ")";
}

/// The plan of `plannerName` for `graph`, or why there is none. Planners
/// that do not aim at a budget (sqrt, none) fail when their peak exceeds it,
/// with the same "smallest budget" answer as the fast planner.
static llvm::Expected<planner::Plan>
runPlanner(StringRef plannerName, const planner::PlanningGraph &graph,
           uint64_t budget, const planner::DeviceProfile &device) {
  if (plannerName == "fast")
    return planner::planFast(graph, budget, device);
  if (plannerName == "milp") {
    llvm::Expected<planner::MilpResult> result =
        planner::planMilp(graph, budget, device);
    if (!result)
      return result.takeError();
    if (result->plan)
      return std::move(*result->plan);
    if (result->status == planner::MilpStatus::Infeasible)
      return llvm::make_error<planner::BudgetTooSmallError>(
          budget, planner::memoryLowerBound(graph),
          planner::smallestFastBudget(graph, device));
    return llvm::createStringError(
        "the MILP planner found no plan within its time limit (%.0f s); try "
        "planner=fast",
        planner::MilpOptions().timeLimitSeconds);
  }
  llvm::Expected<planner::Plan> plan =
      plannerName == "sqrt" ? planner::planChenSqrtN(graph, device)
                            : planner::planKeepAll(graph, device);
  if (plan && plan->simulation.peakBytes > budget)
    return llvm::make_error<planner::BudgetTooSmallError>(
        budget, planner::memoryLowerBound(graph),
        planner::smallestFastBudget(graph, device));
  return plan;
}

/// Whether plan `a` beats plan `b`: less time, then a lower peak.
static bool isBetter(const planner::Plan &a, const planner::Plan &b) {
  if (a.simulation.totalTime != b.simulation.totalTime)
    return a.simulation.totalTime < b.simulation.totalTime;
  return a.simulation.peakBytes < b.simulation.peakBytes;
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
    StringRef plannerName = planner;
    if (plannerName != "fast" && plannerName != "milp" &&
        plannerName != "sqrt" && plannerName != "none")
      return emitError(func.getLoc()) << "unknown planner '" << planner
                              << "' (fast, milp, sqrt or none)";
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
    std::vector<std::vector<Operation *>> orders = {getPlannedOps(body)};
    if (allowReorder) {
      std::vector<Operation *> greedy = scheduleForMemory(body, analysis);
      if (greedy != orders.front())
        orders.push_back(std::move(greedy));
    }

    planner::DeviceProfile plannerDevice =
        getPlannerDevice(*profile, allowOffload);
    std::optional<IRPlanningGraph> bestGraph;
    std::optional<planner::Plan> bestPlan;
    std::optional<std::string> firstError;
    std::optional<uint64_t> smallestBudget, lowerBound;
    for (const std::vector<Operation *> &order : orders) {
      IRPlanningGraph planning =
          buildPlanningGraph(analysis, order, *profile);
      llvm::Expected<planner::Plan> plan =
          runPlanner(plannerName, planning.graph, budgetBytes, plannerDevice);
      if (!plan) {
        llvm::Error rest = llvm::handleErrors(
            plan.takeError(), [&](const planner::BudgetTooSmallError &error) {
              smallestBudget =
                  std::min(smallestBudget.value_or(UINT64_MAX),
                           error.smallestFeasible);
              lowerBound = std::min(lowerBound.value_or(UINT64_MAX),
                                    error.lowerBound);
            });
        if (rest && !firstError)
          firstError = llvm::toString(std::move(rest));
        else
          llvm::consumeError(std::move(rest));
        continue;
      }
      if (!bestPlan || isBetter(*plan, *bestPlan)) {
        bestPlan = std::move(*plan);
        bestGraph = std::move(planning);
      }
    }
    if (!bestPlan) {
      if (smallestBudget)
        return emitError(func.getLoc())
               << "budget of " << formatBudget(budgetBytes)
               << " cannot be met: the smallest budget that can be met is "
               << formatBudget(*smallestBudget) << "; no plan can go below "
               << formatBudget(*lowerBound);
      return emitError(func.getLoc()) << "planning failed: " << *firstError;
    }
    double overhead = bestPlan->simulation.overhead();
    if (maxOverhead >= 0 && overhead > maxOverhead)
      return emitError(func.getLoc()) << llvm::formatv(
                 "the plan for a budget of {0} adds {1:P1} to the compute "
                 "time, more than max-overhead {2:P1}",
                 formatBudget(budgetBytes), overhead, double(maxOverhead))
                 .str();

    if (printPlan)
      printPlanReport(llvm::outs(), func.getName(), *bestGraph, *bestPlan,
                      *profile, budgetBytes, allowOffload);
    AppliedPlanStats applied = applyPlan(body, *bestGraph, *bestPlan);
    recomputedOps += applied.recomputedOps;
    offloads += applied.offloads;
    offloadedBytes += applied.offloadedBytes;
    overheadPermille += static_cast<uint64_t>(overhead * 1000 + 0.5);

    // The mark is what the memory analysis measures on the planned IR: the
    // number --vram-verify-plan checks, never above the planner's own.
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
    if (planned.getPeakBytes() > budgetBytes)
      return emitError(func.getLoc())
             << "internal error: the planned IR peaks at "
             << formatBudget(planned.getPeakBytes()) << ", over the budget of "
             << formatBudget(budgetBytes) << " the planner met";
    return success();
  }
};
} // namespace
