//===- Passes.h - vram-opt's lowering pipelines -----------------*- C++ -*-===//

#ifndef VRAM_PIPELINES_PASSES_H
#define VRAM_PIPELINES_PASSES_H

#include "vram/Dialect/Vram/VramDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace vram {

#define GEN_PASS_DECL
#include "vram/Pipelines/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "vram/Pipelines/Passes.h.inc"

/// Appends the onnx -> linalg-on-tensors steps to `pm`: conversion,
/// decomposition of aggregated ops (linalg.softmax), canonicalize, CSE.
/// Inputs already in linalg pass through.
void buildONNXToLinalgPipeline(mlir::OpPassManager &pm);

/// Appends `vram-lower-to-buffers` to `pm`: buildONNXToLinalgPipeline, then
/// one-shot bufferization with function boundaries (identity layouts), then
/// vram-drop-argument-results (results updated in their argument's buffer
/// are no longer returned). No buffer is freed yet: that is where the CPU
/// and GPU pipelines differ.
void buildTensorToBufferPipeline(mlir::OpPassManager &pm);

/// The memory space that marks host tensors (a plan's offloaded buffers, a
/// planned step's host arguments and results) as host memory on the GPU
/// path, from bufferization until vram-gpu-device-memory takes them.
inline constexpr llvm::StringLiteral kPinnedHostMemorySpace =
    "vram.pinned_host";

/// Appends the GPU path's buffer steps to `pm`: host copies in
/// kPinnedHostMemorySpace, buildTensorToBufferPipeline, canonicalize, and
/// vram-static-arena at cudaMalloc's alignment. What it leaves is the
/// device memory the lowered program allocates: the arena, buffers that
/// escape it, device copies of the arguments.
void buildDeviceBufferPipeline(mlir::OpPassManager &pm);

/// Appends `vram-lower-to-cpu` to `pm`: onnx (or linalg on tensors) down to
/// the LLVM dialect, ready for mlir::ExecutionEngine. The entry function
/// `entry` takes one pointer to an array of descriptor pointers
/// (vram-pack-entry-arguments): its memref arguments, with the identity
/// layout, then its results as out-params, buffers the caller allocates and
/// the function fills (results updated in an argument's buffer stay there and
/// get none: VramDialect::kResultsInArgumentsAttrName says which).
void buildLowerToCPUPipeline(mlir::OpPassManager &pm,
                             llvm::StringRef entry = "main");

/// Registers the passes above and the `vram-lower-to-buffers` and
/// `vram-lower-to-cpu` pipelines.
void registerVramPipelines();

} // namespace vram

#endif // VRAM_PIPELINES_PASSES_H
