//===- RuntimeFunctions.h - declaring the functions lowered code calls -*- C++
//-*-===//

#ifndef VRAM_CONVERSION_RUNTIMEFUNCTIONS_H
#define VRAM_CONVERSION_RUNTIMEFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace vram {

/// The declaration of the runtime function `name` of type `type` in
/// `module` (a kernel library's, the driver runtime's, the collectives'),
/// made private on first use; with `cInterface` callers reach its C
/// interface (`llvm.emit_c_interface`: each memref passed as a pointer to
/// its descriptor). A function of that name and another type is an error,
/// reported on the module.
mlir::FailureOr<mlir::func::FuncOp>
getRuntimeFunction(mlir::ModuleOp module, llvm::StringRef name,
                   mlir::FunctionType type, bool cInterface,
                   mlir::SymbolTableCollection &symbols);

} // namespace vram

#endif // VRAM_CONVERSION_RUNTIMEFUNCTIONS_H
