//===- LowerToCPU.cpp - the vram-lower-to-cpu pass pipeline ---------------===//
//
// The tensor half is shared with vram-lower-to-gpu (TensorToBuffer.cpp);
// every step is an upstream pass except the two in Passes.td, which upstream
// lacks. docs/execution.md explains the order.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// One-shot bufferization's alignment for the buffers it allocates: a cache
/// line.
static constexpr uint64_t kCPUBufferAlignment = 64;

void vram::buildLowerToCPUPipeline(OpPassManager &pm, llvm::StringRef entry) {
  // A memory plan's offloads and prefetches become buffer copies: on CPU,
  // host memory is the same memory (docs/planning.md).
  pm.addPass(createConvertVramToBufferizationPass());
  buildTensorToBufferPipeline(pm);
  // Results are written into buffers the caller passes (out-params), a
  // result allocated in the function directly so: no copy. Returned, every
  // result's descriptor would go back in one struct, and LLVM's instruction
  // selection takes minutes on the block that builds one of thousands.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // Buffers share one arena by liveness, as on GPU, so a CPU run uses the
  // memory layout a GPU run would. Ownership-based deallocation then frees
  // the arena and whatever stays outside it; alone, it would free every buffer
  // at the end of its block, keeping all of them live at once, in a dealloc
  // whose simplification takes time quadratic in their number.
  pm.addPass(createCanonicalizerPass());
  StaticArenaPassOptions arena;
  arena.alignment = kCPUBufferAlignment;
  arena.freeArena = false;
  pm.addNestedPass<func::FuncOp>(createStaticArenaPass(arena));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Matmuls and convolutions -> BLAS; the rest -> a function per loop
  // nest, the large ones split among OpenMP's threads, vector code along
  // the innermost loop where it runs along memory, scalar loops otherwise
  // -> CFG.
  pm.addPass(createCallLibraryKernelsPass());
  pm.addPass(createCopiesToLinalgPass());
  pm.addPass(createOutlineLinalgOpsPass());
  pm.addPass(createParallelizeLinalgOpsPass());
  pm.addPass(createVectorizeLinalgOpsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createLowerSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // expand-strided-metadata computes offsets with affine.apply.
  pm.addPass(createLowerAffinePass());
  pm.addPass(arith::createArithExpandOpsPass());

  // -> LLVM dialect. Math ops with an LLVM intrinsic go first; the rest
  // (erf, tanh, ...) become libm calls, which the JIT resolves in the
  // process (libm is always loaded); integer powers get outlined loops.
  PackEntryArgumentsPassOptions packOptions;
  packOptions.entry = entry.str();
  pm.addPass(createPackEntryArgumentsPass(packOptions));
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  Option<std::string> entry{
      *this, "entry",
      llvm::cl::desc("The entry function, whose arguments and "
                     "results are packed"),
      llvm::cl::init("main")};
};
} // namespace

void vram::registerVramPipelines() {
  registerVramPipelinesPasses();
  PassPipelineRegistration<>(
      "vram-lower-to-buffers",
      "Lowers onnx or linalg on tensors to bufferized memref IR: the steps "
      "vram-lower-to-cpu and vram-lower-to-gpu share",
      buildTensorToBufferPipeline);
  PassPipelineRegistration<LowerToCPUOptions>(
      "vram-lower-to-cpu",
      "Lowers onnx or linalg on tensors to the LLVM dialect for CPU "
      "execution (bufferization, deallocation, loops, packed entry)",
      [](OpPassManager &pm, const LowerToCPUOptions &options) {
        buildLowerToCPUPipeline(pm, options.entry);
      });
}
