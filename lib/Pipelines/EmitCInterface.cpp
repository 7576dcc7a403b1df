//===- EmitCInterface.cpp - the vram-emit-c-interface pass ----------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "vram-emit-c-interface"

namespace vram {
#define GEN_PASS_DEF_EMITCINTERFACEPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct EmitCInterfacePass
    : public vram::impl::EmitCInterfacePassBase<EmitCInterfacePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      module.emitError() << "entry function '@" << entry
                         << "' not found (or has no body)";
      return signalPassFailure();
    }
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(&getContext()));
  }
};
} // namespace
