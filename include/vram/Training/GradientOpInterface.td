//===- GradientOpInterface.td - reverse-mode rules of ops --*- tablegen -*-===//

#ifndef VRAM_TRAINING_GRADIENTOPINTERFACE_TD
#define VRAM_TRAINING_GRADIENTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    The reverse-mode derivative of an op, split in two steps so that what the
    backward pass keeps alive is explicit and minimal.

    `saveForBackward` runs first, with the builder right after the op in the
    forward pass and `wanted` flagging the operands that need a gradient
    (a product keeps only the factor the wanted gradient reads). It returns
    the forward values the gradient will read (the "saved tensors" of
    autograd) and may add what the math needs but the op
    does not yet produce: MaxPool gains its Indices result, Dropout its mask,
    training-mode BatchNormalization the batch statistics.

    `buildGradient` then builds, at the builder's insertion point in the
    backward pass, the gradients of the operands flagged in `wanted` from the
    gradients of the results (null for a result nothing depends on) and the
    saved values. It reads no other forward value except parameters and
    constants; the training pass checks this.
  }];
  let cppNamespace = "::vram";
  let methods = [
    InterfaceMethod<
      "Returns the forward values the gradient reads; may add forward ops "
      "after this op (the builder's insertion point) or give it more "
      "results.",
      "::llvm::FailureOr<::llvm::SmallVector<::mlir::Value>>",
      "saveForBackward",
      (ins "::mlir::OpBuilder &":$builder, "::llvm::ArrayRef<bool>":$wanted)>,
    InterfaceMethod<
      "Builds the gradients of the operands: one value per operand, null "
      "where not wanted or not differentiable.",
      "::llvm::FailureOr<::llvm::SmallVector<::mlir::Value>>",
      "buildGradient",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$saved,
           "::mlir::ValueRange":$resultGradients,
           "::llvm::ArrayRef<bool>":$wanted)>,
  ];
}

#endif // VRAM_TRAINING_GRADIENTOPINTERFACE_TD
