//===- GPUPipeline.cpp - the vram-lower-to-gpu pass pipeline --------------===//
//
// Upstream passes wherever they exist; vram's own fill the gaps upstream
// leaves for whole programs (device memory, loop mapping, one kernel
// module). docs/gpu.md explains the order and the memory scheme.
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/GPUPipeline.h"
#include "vram/Conversion/Passes.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

using namespace mlir;

void vram::buildLowerToGPUPipeline(OpPassManager &pm,
                                   const LowerToGPUOptions &options) {
  // Tensors -> buffers, as in vram-lower-to-cpu.
  buildTensorToBufferPipeline(pm);
  // No ownership-based deallocation here: its run-time ownership checks are
  // host code that would read device buffers. Buffers share one arena by
  // liveness instead; whatever escapes it is freed at function exit.
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createStaticArenaPass());

  // Buffers -> device memory -> kernels.
  pm.addNestedPass<func::FuncOp>(createGPUDeviceMemoryPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  GPUMapParallelLoopsPassOptions mapping;
  mapping.blockSize = options.blockSize;
  pm.addNestedPass<func::FuncOp>(createGPUMapParallelLoopsPass(mapping));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGPUMergeKernelModulesPass());
  // Upstream lowers gpu.memcpy only in its async form: thread one stream
  // token through each function, with a host wait before host side effects.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());

  // The same C interface as the CPU pipeline, so one caller drives both.
  EmitCInterfacePassOptions emit;
  emit.entry = options.entry;
  pm.addPass(createEmitCInterfacePass(emit));

  // Kernels -> NVVM -> PTX/cubin; host -> LLVM calling mgpu*.
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
  if (!options.binaryFile.empty()) {
    WriteGPUBinaryPassOptions write;
    write.output = options.binaryFile;
    pm.addPass(createWriteGPUBinaryPass(write));
  }
}

std::optional<std::string> vram::findPtxas() {
  if (std::optional<std::string> onPath =
          llvm::sys::Process::FindInEnvPath("PATH", "ptxas"))
    return onPath;
  StringRef toolkit = NVVM::getCUDAToolkitPath();
  if (toolkit.empty())
    return std::nullopt;
  SmallString<256> path(toolkit);
  llvm::sys::path::append(path, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(path))
    return std::nullopt;
  return std::string(path);
}

void vram::registerLowerToGPUPipeline() {
  PassPipelineRegistration<LowerToGPUOptions>(
      "vram-lower-to-gpu",
      "Lowers onnx or linalg on tensors to CUDA kernels (PTX/cubin in a "
      "gpu.binary) and LLVM host code calling the mgpu* runtime",
      buildLowerToGPUPipeline);
}
