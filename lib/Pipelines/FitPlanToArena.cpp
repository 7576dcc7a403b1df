//===- FitPlanToArena.cpp - the vram-fit-plan-to-arena pass ---------------===//
//
// Closes the gap between a plan's live bytes and the memory its lowered
// program allocates: plan, lower a copy to buffers as the GPU pipeline
// does, count the device bytes, and plan again under a lower budget while
// they exceed the one asked for.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/TensorSize.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"

#include <limits>

namespace vram {
#define GEN_PASS_DEF_FITPLANTOARENAPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

static constexpr llvm::StringLiteral kLoweredPeakAttrName = "vram.lowered_peak";

/// Bytes of a statically shaped memref in device memory (the default space),
/// 0 for anything else.
static uint64_t deviceBytes(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || memref.getMemorySpace() || !memref.hasStaticShape())
    return 0;
  FailureOr<uint64_t> bytes = vram::getTensorByteSize(memref);
  return succeeded(bytes) ? *bytes : 0;
}

/// How far the device memory of `planned`'s functions, lowered to buffers
/// as vram-lower-to-gpu lowers them, exceeds `budget` (the largest excess,
/// 0 when all fit); each planned function gets kLoweredPeakAttrName. The
/// device memory is every device allocation left after vram-static-arena
/// (its arenas and the buffers that escape them, counted as live together)
/// plus the device copies of the memref arguments: an upper bound on what
/// the runtime counts while the function runs. None when the module does
/// not lower (its diagnostics are swallowed).
static std::optional<uint64_t> loweredExcess(ModuleOp planned,
                                             uint64_t budget) {
  OwningOpRef<ModuleOp> copy = planned.clone();
  MLIRContext *context = planned.getContext();
  {
    ScopedDiagnosticHandler quiet(context,
                                  [](Diagnostic &) { return success(); });
    PassManager pm(context, ModuleOp::getOperationName());
    vram::buildDeviceBufferPipeline(pm);
    if (failed(pm.run(*copy)))
      return std::nullopt;
  }
  llvm::StringMap<uint64_t> loweredBytes;
  copy->walk([&](func::FuncOp func) {
    uint64_t total = 0;
    for (Type argument : func.getArgumentTypes())
      total += deviceBytes(argument);
    func.walk(
        [&](memref::AllocOp alloc) { total += deviceBytes(alloc.getType()); });
    loweredBytes[func.getName()] = total;
  });
  uint64_t excess = 0;
  planned.walk([&](FunctionOpInterface func) {
    if (!func->hasAttr(vram::VramDialect::kPlannedPeakAttrName))
      return;
    uint64_t bytes = loweredBytes.lookup(func.getName());
    func->setAttr(kLoweredPeakAttrName,
                  Builder(context).getI64IntegerAttr(bytes));
    excess = std::max(excess, bytes > budget ? bytes - budget : 0);
  });
  return excess;
}

namespace {
struct FitPlanToArenaPass
    : public vram::impl::FitPlanToArenaPassBase<FitPlanToArenaPass> {
  using Base::Base;

  /// Plans a copy of the module under `target` bytes (vram-plan and
  /// vram-verify-plan); diagnostics go to the caller's handler.
  FailureOr<OwningOpRef<ModuleOp>> planUnder(uint64_t target, bool print) {
    OwningOpRef<ModuleOp> planned = getOperation().clone();
    vram::PlanPassOptions plan;
    plan.budget = std::to_string(target);
    plan.device = device;
    plan.allowOffload = allowOffload;
    plan.maxOverhead = maxOverhead;
    plan.printPlan = print;
    vram::VerifyPlanPassOptions verify;
    verify.budget = plan.budget;
    PassManager pm(&getContext(), ModuleOp::getOperationName());
    pm.addPass(vram::createPlanPass(plan));
    pm.addPass(vram::createVerifyPlanPass(verify));
    if (failed(pm.run(*planned)))
      return failure();
    return planned;
  }

  /// Plans again under lower targets until `planned`'s lowered program
  /// fits `budgetBytes`, and returns the target of the plan kept. A module
  /// that does not lower keeps its plan, with a warning.
  FailureOr<uint64_t> fitToArena(FailureOr<OwningOpRef<ModuleOp>> &planned,
                                 uint64_t budgetBytes) {
    // Targets below the budget: the highest whose lowered program was seen
    // to exceed the budget, and the highest no plan was found for.
    uint64_t target = budgetBytes, tooHigh = budgetBytes, tooLow = 0;
    uint64_t smallestExcess = std::numeric_limits<uint64_t>::max();
    for (unsigned attempt = 1;; ++attempt) {
      uint64_t excess = 0;
      if (succeeded(planned)) {
        std::optional<uint64_t> measured =
            loweredExcess(**planned, budgetBytes);
        if (!measured) {
          getOperation().emitWarning()
              << "the planned program does not lower to buffers here, so "
                 "its arena was not checked against the budget";
          return target;
        }
        excess = *measured;
        if (excess == 0)
          return target;
        tooHigh = target;
        smallestExcess = std::min(smallestExcess, excess);
      } else {
        tooLow = target;
      }
      if (attempt >= attempts)
        return getOperation().emitError()
               << "budget of " << vram::formatBudget(budgetBytes)
               << " is met by the plan's live bytes but not by the lowered "
                  "program: its arena packs holes between the buffers, and "
                  "no plan for less made room for them: the smallest lowered "
                  "program found needs "
               << vram::formatBudget(budgetBytes + smallestExcess) << " ("
               << attempt << " plans, the last for "
               << vram::formatBudget(target) << ")";
      // Plan for less by the excess (the holes scale with what the arena
      // packs, so that usually fits), or halfway to a target known to fail.
      target = excess && tooHigh - excess > tooLow
                   ? tooHigh - excess
                   : tooLow + (tooHigh - tooLow) / 2;
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      planned = planUnder(target, false);
    }
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<const vram::DeviceProfile &> profile =
        vram::requireDeviceProfile(device);
    if (!profile) {
      module.emitError() << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    llvm::Expected<uint64_t> resolved = vram::resolveBudget(budget, *profile);
    if (!resolved) {
      module.emitError() << "budget: " << llvm::toString(resolved.takeError());
      return signalPassFailure();
    }
    uint64_t budgetBytes = *resolved;

    // The first plan is vram-plan's own, with its errors (an impossible
    // budget names the smallest one that can be met).
    FailureOr<OwningOpRef<ModuleOp>> planned = planUnder(budgetBytes, false);
    if (failed(planned))
      return signalPassFailure();
    uint64_t target = budgetBytes;
    if (checkArena) {
      FailureOr<uint64_t> fitted = fitToArena(planned, budgetBytes);
      if (failed(fitted))
        return signalPassFailure();
      target = *fitted;
    }

    if (printPlan) {
      if (failed(planUnder(target, true)))
        return signalPassFailure();
      if (target != budgetBytes)
        llvm::outs() << "  planned under " << vram::formatBudget(target)
                     << " so that the lowered program, whose arena packs "
                        "holes between its buffers, fits the budget of "
                     << vram::formatBudget(budgetBytes) << "\n";
    }
    // The budget asked for, which the planned peak and the lowered program
    // both meet, is what reports and vram-verify-plan check.
    (*planned)->walk([&](FunctionOpInterface func) {
      if (func->hasAttr(vram::VramDialect::kBudgetAttrName))
        func->setAttr(vram::VramDialect::kBudgetAttrName,
                      Builder(&getContext()).getI64IntegerAttr(budgetBytes));
    });
    module.getBodyRegion().takeBody((*planned)->getBodyRegion());
  }
};
} // namespace
