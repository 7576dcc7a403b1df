//===- TensorToBuffer.cpp - the steps both lowering pipelines share -------===//
//
// onnx -> linalg on tensors -> bufferized memref IR: the first half of
// vram-lower-to-cpu and vram-lower-to-gpu, which differ only in how buffers
// are freed afterwards (ownership-based deallocation vs. one static arena).
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"
#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void vram::buildONNXToLinalgPipeline(OpPassManager &pm) {
  // onnx -> linalg, tensor, arith, math on tensors. Inputs already in
  // linalg pass through untouched.
  pm.addPass(createConvertONNXToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createDecomposeAggregatedOpsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void vram::buildTensorToBufferPipeline(OpPassManager &pm) {
  buildONNXToLinalgPipeline(pm);
  // The identity layout at function boundaries is what a caller can build
  // a descriptor for without knowing the body.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Parameters and optimizer state updated in place stay in their
  // arguments: returning them again would copy them.
  pm.addPass(createDropArgumentResultsPass());
}
