//===- Window.cpp - geometry shared by convolution and pooling -----------===//

#include "Window.h"
#include "Utils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace vram::onnx_to_linalg {

SmallVector<int64_t> intsOr(ArrayAttr attr, unsigned size, int64_t fallback) {
  if (!attr)
    return SmallVector<int64_t>(size, fallback);
  return llvm::to_vector(llvm::map_range(
      attr, [](Attribute a) { return cast<IntegerAttr>(a).getInt(); }));
}

/// Resolves pads per the ONNX Conv/Pool auto_pad rules: SAME_* pads so that
/// output = ceil(input / stride), the odd element at the end for SAME_UPPER
/// and at the beginning for SAME_LOWER.
LogicalResult resolvePads(Operation *op, StringRef autoPad, ArrayAttr pads,
                          ArrayRef<int64_t> inputShape,
                          ArrayRef<int64_t> outputShape, Window &window) {
  unsigned rank = window.rank();
  window.padBegin.assign(rank, 0);
  window.padEnd.assign(rank, 0);
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> explicitPads = intsOr(pads, 2 * rank, 0);
    window.padBegin.assign(explicitPads.begin(), explicitPads.begin() + rank);
    window.padEnd.assign(explicitPads.begin() + rank, explicitPads.end());
    return success();
  }
  if (autoPad == "VALID")
    return success();
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return emitLoweringError(op) << "unknown auto_pad '" << autoPad << "'";
  for (unsigned i = 0; i < rank; ++i) {
    int64_t total =
        std::max<int64_t>(0, (outputShape[i] - 1) * window.strides[i] +
                                 window.extent(i) - inputShape[i]);
    int64_t small = total / 2;
    window.padBegin[i] = autoPad == "SAME_UPPER" ? small : total - small;
    window.padEnd[i] = total - window.padBegin[i];
  }
  return success();
}

/// Pads the spatial dimensions (2...) of an N x C x D1... tensor with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, TypedAttr value) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  SmallVector<OpFoldResult> lowSizes(2, b.getIndexAttr(0));
  SmallVector<OpFoldResult> highSizes(2, b.getIndexAttr(0));
  for (unsigned i = 0; i < low.size(); ++i) {
    shape[i + 2] += low[i] + high[i];
    lowSizes.push_back(b.getIndexAttr(low[i]));
    highSizes.push_back(b.getIndexAttr(high[i]));
  }
  Value padValue = arith::ConstantOp::create(b, loc, value);
  return tensor::PadOp::create(b, loc, type.clone(shape), input, lowSizes,
                               highSizes, padValue)
      .getResult();
}

/// Extra padding at the end of each spatial dim so that the last window
/// (ceil_mode, or SAME pads clamped at zero) lies inside the padded input.
SmallVector<int64_t> paddingForLastWindow(const Window &window,
                                          ArrayRef<int64_t> inputShape,
                                          ArrayRef<int64_t> outputShape) {
  SmallVector<int64_t> high;
  for (unsigned i = 0; i < window.rank(); ++i) {
    int64_t needed =
        (outputShape[i] - 1) * window.strides[i] + window.extent(i);
    int64_t available = inputShape[i] + window.padBegin[i] + window.padEnd[i];
    high.push_back(window.padEnd[i] + std::max<int64_t>(0, needed - available));
  }
  return high;
}

/// `o_i * stride_i + k_i * dilation_i` for each spatial dim: the input
/// position a window op reads, with loop dims o_i from `outDim` and k_i from
/// `kernelDim` on.
SmallVector<AffineExpr> windowInputExprs(MLIRContext *context,
                                         const Window &window, unsigned outDim,
                                         unsigned kernelDim) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < window.rank(); ++i)
    exprs.push_back(getAffineDimExpr(outDim + i, context) * window.strides[i] +
                    getAffineDimExpr(kernelDim + i, context) *
                        window.dilations[i]);
  return exprs;
}

SmallVector<AffineExpr> dimExprs(MLIRContext *context,
                                 ArrayRef<unsigned> dims) {
  return llvm::to_vector(llvm::map_range(
      dims, [&](unsigned d) { return getAffineDimExpr(d, context); }));
}

} // namespace vram::onnx_to_linalg
