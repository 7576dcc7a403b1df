//===- ONNXToLinalg.h - patterns lowering onnx to linalg --------*- C++ -*-===//
//
// The patterns are grouped by op family, one file each in
// lib/Conversion/ONNXToLinalg/; the vram-convert-onnx-to-linalg pass
// applies all of them.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_CONVERSION_ONNXTOLINALG_ONNXTOLINALG_H
#define VRAM_CONVERSION_ONNXTOLINALG_ONNXTOLINALG_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace vram {

/// Tensor types as linalg/arith need them: unsigned integer elements become
/// signless of the same width (ops keep unsigned semantics by looking at the
/// original onnx types); everything else is unchanged.
class ONNXToLinalgTypeConverter : public mlir::TypeConverter {
public:
  ONNXToLinalgTypeConverter();
};

/// Elementwise math and activations: Add, Sub, Mul, Div, Pow, Sqrt,
/// Reciprocal, Neg, Exp, Log, Relu, LeakyRelu, Sigmoid, Tanh, Erf, Gelu,
/// HardSigmoid, HardSwish, Clip, Where, Cast, Greater, Equal, Not (with
/// multidirectional broadcasting).
void populateElementwiseToLinalgPatterns(
    const mlir::TypeConverter &typeConverter, mlir::RewritePatternSet &patterns);

/// MatMul (batched, broadcast batch dims) and Gemm.
void populateLinearAlgebraToLinalgPatterns(
    const mlir::TypeConverter &typeConverter, mlir::RewritePatternSet &patterns);

/// Conv and ConvTranspose, grouped and depthwise.
void populateConvToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                  mlir::RewritePatternSet &patterns);

/// MaxPool (with Indices), AveragePool, GlobalAveragePool.
void populatePoolToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                  mlir::RewritePatternSet &patterns);

/// BatchNormalization (inference and training mode), LayerNormalization,
/// Softmax, LogSoftmax, Dropout.
void populateNormalizationToLinalgPatterns(
    const mlir::TypeConverter &typeConverter, mlir::RewritePatternSet &patterns);

/// ReduceMean, ReduceSum.
void populateReductionToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                       mlir::RewritePatternSet &patterns);

/// Data movement: Constant, Identity, Reshape, Flatten, Transpose, Concat,
/// Split, Slice, Gather, Shape, Unsqueeze, Squeeze, Expand.
void populateDataMovementToLinalgPatterns(
    const mlir::TypeConverter &typeConverter, mlir::RewritePatternSet &patterns);

/// Pad, every mode.
void populatePadToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                 mlir::RewritePatternSet &patterns);

/// Resize: nearest, linear and cubic, every coordinate transformation.
void populateResizeToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                    mlir::RewritePatternSet &patterns);

/// ScatterElements (Gather's gradients) and ScatterND, with every reduction.
void populateScatterToLinalgPatterns(const mlir::TypeConverter &typeConverter,
                                     mlir::RewritePatternSet &patterns);

/// The optimizer step vram-train adds: vram.update and vram.increment.
void populateTrainingOpsToLinalgPatterns(
    const mlir::TypeConverter &typeConverter, mlir::RewritePatternSet &patterns);

} // namespace vram

#endif // VRAM_CONVERSION_ONNXTOLINALG_ONNXTOLINALG_H
