//===- VerifyPlan.cpp - the vram-verify-plan pass: check a planned function ===//
//
// Shares nothing with the planner: memory is re-measured on the IR with the
// memory analysis, dominance with mlir::DominanceInfo.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "vram-verify-plan"

namespace vram {
#define GEN_PASS_DEF_VERIFYPLANPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

/// Every operand of every op is defined before it is used. The IR verifier
/// checks this too, but only between passes; checking here makes the pass
/// a complete certificate of a plan on its own.
static LogicalResult verifyDominance(FunctionOpInterface func) {
  DominanceInfo dominance(func);
  WalkResult result = func.walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands())
      if (!dominance.properlyDominates(operand.get(), op)) {
        op->emitError() << "operand #" << operand.getOperandNumber()
                        << " is used before it is defined";
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// A prefetch brings back a copy the program made or an argument the
/// caller passes in host memory; a host value from anywhere else has no
/// plan behind it.
static LogicalResult verifyPrefetchSources(FunctionOpInterface func) {
  WalkResult result = func.walk([&](PrefetchOp prefetch) {
    Value input = prefetch.getInput();
    if (!input.getDefiningOp<OffloadOp>() && !isa<BlockArgument>(input)) {
      prefetch.emitOpError("reads a host value that no vram.offload made "
                           "and no argument passes");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Fails at the first op where live bytes exceed `budget`.
static LogicalResult verifyBudget(FunctionOpInterface func, uint64_t budget) {
  MemoryAnalysis analysis(func);
  if (!analysis.isValid()) {
    emitAnalysisErrors(analysis, func);
    return failure();
  }
  for (auto [point, op] : llvm::enumerate(analysis.getSchedule())) {
    uint64_t live = analysis.getLiveBytes(point);
    if (live <= budget)
      continue;
    InFlightDiagnostic diag =
        op->emitError() << "live bytes " << formatExactBytes(live)
                        << " exceed the budget of " << formatExactBytes(budget)
                        << " bytes here";
    diag.attachNote(analysis.getPeakOp()->getLoc())
        << "the peak is " << formatExactBytes(analysis.getPeakBytes())
        << " bytes";
    return failure();
  }
  return success();
}

namespace {
struct VerifyPlanPass : public vram::impl::VerifyPlanPassBase<VerifyPlanPass> {
  using VerifyPlanPassBase::VerifyPlanPassBase;

  void runOnOperation() override {
    markAllAnalysesPreserved();
    getOperation()->walk([&](FunctionOpInterface func) {
      if (!func.isExternal() && failed(verifyFunction(func)))
        signalPassFailure();
    });
  }

  LogicalResult verifyFunction(FunctionOpInterface func) {
    std::optional<uint64_t> budgetBytes;
    if (!budget.empty()) {
      llvm::Expected<uint64_t> parsed = parseByteSize(budget);
      if (!parsed)
        return emitError(func.getLoc())
               << "budget: " << llvm::toString(parsed.takeError());
      budgetBytes = *parsed;
    } else if (auto attr = func->getAttrOfType<IntegerAttr>(
                   VramDialect::kBudgetAttrName)) {
      budgetBytes = attr.getValue().getZExtValue();
    }
    if (failed(verifyDominance(func)) || failed(verifyPrefetchSources(func)))
      return failure();
    return budgetBytes ? verifyBudget(func, *budgetBytes) : success();
  }
};
} // namespace
