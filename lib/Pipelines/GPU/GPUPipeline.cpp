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

#include <cstdlib>

using namespace mlir;

/// Upstream's NVVM serializer finds the CUDA toolkit (libdevice, for the
/// __nv_expf/__nv_logf calls of kernels using exp, log or erf; ptxas) only
/// through CUDA_ROOT, CUDA_HOME or CUDA_PATH; without one, such kernels keep
/// unresolved calls and ptxas rejects them. When none is set, point
/// CUDA_HOME at the toolkit CMake found when vram-opt was built.
static void defaultCUDAToolkitPath() {
#ifdef VRAM_CUDA_TOOLKIT_DIR
  if (NVVM::getCUDAToolkitPath().empty())
    ::setenv("CUDA_HOME", VRAM_CUDA_TOOLKIT_DIR, /*overwrite=*/0);
#endif
}

void vram::buildLowerToGPUPipeline(OpPassManager &pm,
                                   const LowerToGPUOptions &options) {
  defaultCUDAToolkitPath();
  buildDeviceBufferPipeline(pm);

  // Buffers -> device memory -> kernels.
  GPUDeviceMemoryPassOptions deviceMemory;
  deviceMemory.hostMemorySpace = kPinnedHostMemorySpace.str();
  pm.addNestedPass<func::FuncOp>(createGPUDeviceMemoryPass(deviceMemory));
  pm.addPass(createGPUOverlapCopiesPass());
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

  // A C interface for a host program that calls the entry ahead of time
  // (the CPU pipeline packs its entry for the JIT instead).
  EmitCInterfacePassOptions emit;
  emit.entry = options.entry;
  pm.addPass(createEmitCInterfacePass(emit));

  // Kernels -> NVVM -> PTX/cubin; host -> LLVM calling mgpu*.
  // Upstream's pipeline lowers SCF too, in time quadratic in a block's
  // length; done here first, it finds nothing left.
  pm.addPass(createLowerSCFToCFPass());
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
  defaultCUDAToolkitPath();
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
