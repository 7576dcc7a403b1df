//===- DropArgumentResults.cpp - the vram-drop-argument-results pass ------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"

#define DEBUG_TYPE "vram-drop-argument-results"

namespace vram {
#define GEN_PASS_DEF_DROPARGUMENTRESULTSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// The entry-block argument `value` is, looking through casts of the same
/// buffer, or null.
static BlockArgument getArgumentBuffer(Value value, Block &entry) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto argument = dyn_cast<BlockArgument>(value);
  return argument && argument.getOwner() == &entry ? argument : nullptr;
}

namespace {
struct DropArgumentResultsPass
    : public vram::impl::DropArgumentResultsPassBase<DropArgumentResultsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      // A call site would need the same rewrite; entry points have none.
      if (func.isExternal() || !func.isPublic() ||
          !SymbolTable::symbolKnownUseEmpty(func, module) ||
          !llvm::hasSingleElement(func.getBody()))
        continue;
      Block &entry = func.getBody().front();
      auto ret = cast<func::ReturnOp>(entry.getTerminator());
      SmallVector<int64_t> argumentOf;
      llvm::BitVector dropped(func.getNumResults());
      for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
        BlockArgument argument = getArgumentBuffer(operand, entry);
        argumentOf.push_back(argument ? int64_t(argument.getArgNumber()) : -1);
        if (argument)
          dropped.set(i);
      }
      if (dropped.none())
        continue;
      ret->eraseOperands(dropped);
      if (failed(func.eraseResults(dropped))) {
        func.emitError("cannot drop the results held in arguments");
        return signalPassFailure();
      }
      func->setAttr(vram::VramDialect::kResultsInArgumentsAttrName,
                    DenseI64ArrayAttr::get(&getContext(), argumentOf));
    }
  }
};
} // namespace
