//===- GPUPipeline.h - the vram-lower-to-gpu pass pipeline ------*- C++ -*-===//

#ifndef VRAM_PIPELINES_GPUPIPELINE_H
#define VRAM_PIPELINES_GPUPIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace vram {

struct LowerToGPUOptions : public mlir::PassPipelineOptions<LowerToGPUOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target SM: sm_80 (A100), sm_90 "
                                          "(H100/H200)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features; sm_90 needs +ptx80 or later"),
      llvm::cl::init("+ptx80")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel object: isa (PTX, no CUDA toolkit needed), bin "
                     "(cubin) or fatbin (both need ptxas on PATH)"),
      llvm::cl::init("isa")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block"),
                            llvm::cl::init(256)};
  Option<std::string> binaryFile{
      *this, "binary-file",
      llvm::cl::desc("Also write the kernel object (PTX text for format=isa) "
                     "to this file"),
      llvm::cl::init("")};
  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("Function that gets a C interface "
                                           "(_mlir_ciface_<entry>)"),
                            llvm::cl::init("main")};
};

/// Appends `vram-lower-to-gpu` to `pm`: onnx (or linalg on tensors) down to
/// LLVM-dialect host code calling the mgpu* runtime ABI (runtime/) plus one
/// gpu.binary with every kernel. docs/gpu.md describes the steps.
void buildLowerToGPUPipeline(mlir::OpPassManager &pm,
                             const LowerToGPUOptions &options);

/// The ptxas that `format=bin` and `format=fatbin` would run, searched
/// where upstream's NVVM serializer searches it (PATH, then the CUDA
/// toolkit's bin/: CUDA_ROOT, CUDA_HOME, CUDA_PATH or MLIR's configured
/// default); std::nullopt when there is none.
std::optional<std::string> findPtxas();

/// Registers the `vram-lower-to-gpu` pipeline.
void registerLowerToGPUPipeline();

} // namespace vram

#endif // VRAM_PIPELINES_GPUPIPELINE_H
