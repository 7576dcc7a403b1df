//===- InitAll.h - vram's dialects, passes, translations ------*- C++ -*-===//
//
// The entry points another tool calls to use vram-opt's compiler pieces, as
// mlir/InitAllDialects.h and mlir/InitAllPasses.h are upstream's: a custom
// `*-opt` registers these next to upstream's and can then run `vram-train`,
// `vram-plan`, `vram-verify-plan` and the lowering pipelines (docs/using.md).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_INITALL_H
#define VRAM_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace vram {

/// The onnx and vram dialects, with the external models the analyses and
/// passes rely on: the cost model of onnx, vram and linalg ops
/// (CostModelOpInterface) and the gradient rules of onnx ops
/// (GradientOpInterface).
void registerAllDialects(mlir::DialectRegistry &registry);

/// Every `vram-*` pass and the pipelines `vram-lower-to-buffers`,
/// `vram-lower-to-cpu` and `vram-lower-to-gpu`. vram-lower-to-gpu also
/// needs upstream's GPU-to-LLVM-IR translations and NVVM target on the
/// registry (mlir::registerAllGPUToLLVMIRTranslations and
/// mlir::registerAllExtensions, or NVVM's own registration).
void registerAllPasses();

/// The `import-onnx` translation, for mlir-translate-like drivers.
void registerAllTranslations();

} // namespace vram

#endif // VRAM_INITALL_H
