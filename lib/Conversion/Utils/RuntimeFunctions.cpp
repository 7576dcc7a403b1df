//===- RuntimeFunctions.cpp - declaring the functions lowered code calls --===//

#include "vram/Conversion/RuntimeFunctions.h"

#include "mlir/Dialect/Func/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

FailureOr<func::FuncOp>
vram::getRuntimeFunction(ModuleOp module, StringRef name, FunctionType type,
                         bool cInterface, SymbolTableCollection &symbols) {
  FailureOr<func::FuncOp> existing =
      func::lookupFnDecl(module, name, type, &symbols);
  if (failed(existing))
    return module.emitError() << "'" << name
                              << "' is already declared with a type other "
                                 "than "
                              << type;
  if (*existing)
    return existing;
  OpBuilder builder(module.getContext());
  func::FuncOp declared = func::createFnDecl(builder, module, name, type,
                                             /*setPrivate=*/true, &symbols);
  if (cInterface)
    declared->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                      builder.getUnitAttr());
  return declared;
}
