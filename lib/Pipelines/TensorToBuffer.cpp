//===- TensorToBuffer.cpp - the steps both lowering pipelines share -------===//
//
// onnx -> linalg on tensors -> bufferized memref IR: the first half of
// vram-lower-to-cpu and vram-lower-to-gpu, which differ only in how buffers
// are freed afterwards (ownership-based deallocation vs. one static arena).
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// onnx -> linalg, tensor, arith, math on tensors. Inputs already in linalg
/// pass through untouched.
static void convertToLinalg(OpPassManager &pm) {
  pm.addPass(vram::createConvertONNXToLinalgPass());
  pm.addNestedPass<func::FuncOp>(vram::createDecomposeAggregatedOpsPass());
}

void vram::buildONNXToLinalgPipeline(OpPassManager &pm) {
  convertToLinalg(pm);
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void vram::buildTensorToBufferPipeline(OpPassManager &pm) {
  convertToLinalg(pm);
  // Fewer tensors before they become buffers: chains of elementwise ops in
  // one loop nest, and activations computed inside the padded input of the
  // convolution that reads them.
  pm.addNestedPass<func::FuncOp>(createFuseElementwiseOpsPass());
  pm.addNestedPass<func::FuncOp>(createPadInPlacePass());
  // Every destination its own allocation, and no CSE on tensors. Equal
  // tensor.empty ops merged make one-shot bufferization write unrelated
  // results of one shape into one buffer (a backward gradient into the
  // buffer of a dead forward activation), which stays allocated from the
  // first write to the last read: the arena could not reuse that memory in
  // between, where the memory analysis frees it. And a plan's recomputation
  // is an op equal to the one it repeats: a concat or a pad, which has no
  // destination, merged with its original keeps the original's result live
  // until the rerun's readers, undoing the plan (DenseNet-121's training
  // step planned at half its peak lowered 77 MB over the plan).
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  pm.addPass(createCanonicalizerPass());
  // The identity layout at function boundaries is what a caller can build
  // a descriptor for without knowing the body.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // A tensor's encoding is its buffer's memory space: the host tensors of a
  // plan lowered for the GPU (vram-convert-vram-to-bufferization) stay in
  // host memory, arguments and results included. No other tensor has one.
  bufferize.useEncodingForMemorySpace = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // The device grid of a per-rank program, which its collectives referred
  // to before they became runtime calls.
  pm.addPass(createSymbolDCEPass());
  // A slice computed in place and inserted back where it was extracted
  // (vram-pad-in-place) bufferizes to a copy between two equal subviews:
  // merged, the canonicalizer that follows drops the copy as a self-copy.
  pm.addPass(createCSEPass());
  // Parameters and optimizer state updated in place stay in their
  // arguments: returning them again would copy them.
  pm.addPass(createDropArgumentResultsPass());
}

void vram::buildDeviceBufferPipeline(OpPassManager &pm) {
  // A plan's offloads and prefetches become copies, as on CPU, except that
  // host tensors are host memory: the static arena packs them apart from
  // device buffers, and the device-memory pass pins them.
  ConvertVramToBufferizationPassOptions hostCopies;
  hostCopies.hostMemorySpace = kPinnedHostMemorySpace.str();
  pm.addPass(createConvertVramToBufferizationPass(hostCopies));
  buildTensorToBufferPipeline(pm);
  // Matmuls and convolutions -> cuBLAS and cuDNN, before the arena places
  // the convolutions' workspace buffers.
  CallLibraryKernelsPassOptions library;
  library.target = "gpu";
  pm.addPass(createCallLibraryKernelsPass(library));
  // No ownership-based deallocation: its run-time ownership checks are
  // host code that would read device buffers. Buffers share one arena by
  // liveness instead; whatever escapes it is freed at function exit.
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createStaticArenaPass());
}
