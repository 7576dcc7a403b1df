//===- Window.h - geometry shared by convolution and pooling ----*- C++ -*-===//
//
// Private to lib/Conversion/ONNXToLinalg: the window (kernel, strides,
// dilations, pads with auto_pad resolved) that Conv.cpp and Pool.cpp lower
// with, and the padding and indexing helpers both use.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_CONVERSION_ONNXTOLINALG_WINDOW_H
#define VRAM_LIB_CONVERSION_ONNXTOLINALG_WINDOW_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace vram::onnx_to_linalg {
using namespace mlir;

/// A window op's geometry along its spatial dimensions, with auto_pad
/// resolved into explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;

  unsigned rank() const { return kernel.size(); }
  int64_t extent(unsigned i) const {
    return dilations[i] * (kernel[i] - 1) + 1;
  }
};

SmallVector<int64_t> intsOr(ArrayAttr attr, unsigned size, int64_t fallback);

/// Resolves pads per the ONNX Conv/Pool auto_pad rules: SAME_* pads so that
/// output = ceil(input / stride), the odd element at the end for SAME_UPPER
/// and at the beginning for SAME_LOWER.
LogicalResult resolvePads(Operation *op, StringRef autoPad, ArrayAttr pads,
                          ArrayRef<int64_t> inputShape,
                          ArrayRef<int64_t> outputShape, Window &window);

/// Pads the spatial dimensions (2...) of an N x C x D1... tensor with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, TypedAttr value);

/// Extra padding at the end of each spatial dim so that the last window
/// (ceil_mode, or SAME pads clamped at zero) lies inside the padded input.
SmallVector<int64_t> paddingForLastWindow(const Window &window,
                                          ArrayRef<int64_t> inputShape,
                                          ArrayRef<int64_t> outputShape);

/// `o_i * stride_i + k_i * dilation_i` for each spatial dim: the input
/// position a window op reads, with loop dims o_i from `outDim` and k_i from
/// `kernelDim` on.
SmallVector<AffineExpr> windowInputExprs(MLIRContext *context,
                                         const Window &window, unsigned outDim,
                                         unsigned kernelDim);

/// The dimension expressions d_i for each of `dims`.
SmallVector<AffineExpr> dimExprs(MLIRContext *context, ArrayRef<unsigned> dims);

/// A linalg convolution or pooling named op over `inputs` into `init`, with
/// the window's strides and dilations.
template <typename NamedOp>
Value createWindowNamedOp(OpBuilder &b, Location loc, ValueRange inputs,
                          Value init, const Window &window) {
  return NamedOp::create(b, loc, init.getType(), inputs, init,
                         b.getI64TensorAttr(window.strides),
                         b.getI64TensorAttr(window.dilations))
      .getResult(0);
}

} // namespace vram::onnx_to_linalg

#endif // VRAM_LIB_CONVERSION_ONNXTOLINALG_WINDOW_H
