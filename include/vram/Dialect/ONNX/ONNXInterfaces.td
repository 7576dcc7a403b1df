//===- ONNXInterfaces.td - interfaces of the ONNX dialect --*- tablegen -*-===//

#ifndef VRAM_DIALECT_ONNX_ONNXINTERFACES_TD
#define VRAM_DIALECT_ONNX_ONNXINTERFACES_TD

include "mlir/IR/OpBase.td"

def ONNX_InferShapesOpInterface : OpInterface<"ONNXInferShapesOpInterface"> {
  let cppNamespace = "::vram";
  let description = [{
    Shape and element-type inference with ONNX semantics. The importer builds
    each op with placeholder result types and asks the op for its real ones,
    so files that no ONNX library version here can infer (opset 18 and later)
    still get static shapes; `vram-onnx-infer-shapes` re-infers a whole
    function after its argument types change (re-binding the batch).
    Not InferTypeOpInterface: that one also makes the verifier demand the
    inferred type exactly, while ops built by other passes may carry a
    compatible, less static result type.
  }];
  let methods = [
    InterfaceMethod<[{
        Computes the type of every result from the operands' types, the
        values of constant operands (shapes, axes, pads) and the attributes.
        Dimensions that depend on values unknown at compile time are dynamic.
        Emits an error naming the problem and fails when the operands are
        impossible for the op.
      }],
      "::mlir::LogicalResult", "inferResultTypes",
      (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$resultTypes)>
  ];
}

#endif // VRAM_DIALECT_ONNX_ONNXINTERFACES_TD
