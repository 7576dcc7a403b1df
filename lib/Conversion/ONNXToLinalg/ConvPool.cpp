//===- ConvPool.cpp - Conv, ConvTranspose and pooling to linalg -----------===//
//
// Convolutions become linalg convolution named ops on a zero-padded input
// (grouped 2-d ones in the ngchw/gfchw form, other grouped ones a
// linalg.generic); a transposed convolution is the convolution of the
// zero-inserted input with the flipped, transposed kernel. Pooling uses
// linalg.pooling_nc*w_{max,sum} for 1-d and 2-d windows and linalg.generic
// otherwise; AveragePool then divides by each window's element count.
// MaxPool's Indices output comes from one linalg.generic yielding both
// each window's maximum and its flat position.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// A window op's geometry along its spatial dimensions, with auto_pad
/// resolved into explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;

  unsigned rank() const { return kernel.size(); }
  int64_t extent(unsigned i) const { return dilations[i] * (kernel[i] - 1) + 1; }
};

enum class PoolKind { Max, MaxUnsigned, Sum };

} // namespace

static SmallVector<int64_t> intsOr(ArrayAttr attr, unsigned size,
                                   int64_t fallback) {
  if (!attr)
    return SmallVector<int64_t>(size, fallback);
  return llvm::to_vector(llvm::map_range(attr, [](Attribute a) {
    return cast<IntegerAttr>(a).getInt();
  }));
}

/// Resolves pads per the ONNX Conv/Pool auto_pad rules: SAME_* pads so that
/// output = ceil(input / stride), the odd element at the end for SAME_UPPER
/// and at the beginning for SAME_LOWER.
static LogicalResult resolvePads(Operation *op, StringRef autoPad,
                                 ArrayAttr pads, ArrayRef<int64_t> inputShape,
                                 ArrayRef<int64_t> outputShape,
                                 Window &window) {
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
    int64_t total = std::max<int64_t>(
        0, (outputShape[i] - 1) * window.strides[i] + window.extent(i) -
               inputShape[i]);
    int64_t small = total / 2;
    window.padBegin[i] = autoPad == "SAME_UPPER" ? small : total - small;
    window.padEnd[i] = total - window.padBegin[i];
  }
  return success();
}

/// Pads the spatial dimensions (2...) of an N x C x D1... tensor with `value`.
static Value padSpatial(OpBuilder &b, Location loc, Value input,
                        ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                        TypedAttr value) {
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
static SmallVector<int64_t> paddingForLastWindow(const Window &window,
                                                 ArrayRef<int64_t> inputShape,
                                                 ArrayRef<int64_t> outputShape) {
  SmallVector<int64_t> high;
  for (unsigned i = 0; i < window.rank(); ++i) {
    int64_t needed = (outputShape[i] - 1) * window.strides[i] + window.extent(i);
    int64_t available = inputShape[i] + window.padBegin[i] + window.padEnd[i];
    high.push_back(window.padEnd[i] + std::max<int64_t>(0, needed - available));
  }
  return high;
}

/// `o_i * stride_i + k_i * dilation_i` for each spatial dim: the input
/// position a window op reads, with loop dims o_i from `outDim` and k_i from
/// `kernelDim` on.
static SmallVector<AffineExpr> windowInputExprs(MLIRContext *context,
                                                const Window &window,
                                                unsigned outDim,
                                                unsigned kernelDim) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i < window.rank(); ++i)
    exprs.push_back(getAffineDimExpr(outDim + i, context) * window.strides[i] +
                    getAffineDimExpr(kernelDim + i, context) *
                        window.dilations[i]);
  return exprs;
}

static SmallVector<AffineExpr> dimExprs(MLIRContext *context,
                                        ArrayRef<unsigned> dims) {
  return llvm::to_vector(llvm::map_range(
      dims, [&](unsigned d) { return getAffineDimExpr(d, context); }));
}

template <typename NamedOp>
static Value createWindowNamedOp(OpBuilder &b, Location loc, ValueRange inputs,
                                 Value init, const Window &window) {
  return NamedOp::create(b, loc, init.getType(), inputs, init,
                         b.getI64TensorAttr(window.strides),
                         b.getI64TensorAttr(window.dilations))
      .getResult(0);
}

/// Expands dim `dim` of `value` into (`outer`, size / `outer`).
static Value splitDim(OpBuilder &b, Location loc, Value value, unsigned dim,
                      int64_t outer) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= outer;
  shape.insert(shape.begin() + dim, outer);
  SmallVector<ReassociationIndices> groups;
  for (unsigned i = 0, e = type.getRank(); i < e; ++i) {
    if (i < dim)
      groups.push_back({i});
    else if (i == dim)
      groups.push_back({i, i + 1});
    else
      groups.push_back({i + 1});
  }
  return tensor::ExpandShapeOp::create(b, loc, type.clone(shape), value,
                                       groups);
}

/// Merges dims `dim` and `dim + 1` of `value`.
static Value mergeDims(OpBuilder &b, Location loc, Value value, unsigned dim) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<ReassociationIndices> groups;
  for (unsigned i = 0, e = type.getRank(); i < e; ++i) {
    if (i == dim)
      groups.push_back({i, i + 1});
    else if (i != dim + 1)
      groups.push_back({i});
  }
  return tensor::CollapseShapeOp::create(b, loc, value, groups);
}

/// Grouped convolution of any spatial rank as a linalg.generic over loops
/// (n, g, f, o..., c, k...) on operands already split per group.
static Value createGroupedConvGeneric(OpBuilder &b, Location loc, Value input,
                                      Value weight, Value init,
                                      const Window &window) {
  MLIRContext *context = b.getContext();
  unsigned rank = window.rank();
  unsigned numLoops = 4 + 2 * rank;
  unsigned outDim = 3, channelDim = 3 + rank, kernelDim = 4 + rank;
  SmallVector<AffineExpr> inputExprs = dimExprs(context, {0, 1, channelDim});
  llvm::append_range(inputExprs,
                     windowInputExprs(context, window, outDim, kernelDim));
  SmallVector<AffineExpr> weightExprs = dimExprs(context, {1, 2, channelDim});
  SmallVector<AffineExpr> outExprs = dimExprs(context, {0, 1, 2});
  for (unsigned i = 0; i < rank; ++i) {
    weightExprs.push_back(getAffineDimExpr(kernelDim + i, context));
    outExprs.push_back(getAffineDimExpr(outDim + i, context));
  }
  SmallVector<AffineMap> maps = {
      AffineMap::get(numLoops, 0, inputExprs, context),
      AffineMap::get(numLoops, 0, weightExprs, context),
      AffineMap::get(numLoops, 0, outExprs, context)};
  SmallVector<utils::IteratorType> iterators(3 + rank,
                                             utils::IteratorType::parallel);
  iterators.append(1 + rank, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{input, weight}, init, maps,
             iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
               Value sum = arith::AddFOp::create(nb, nloc, args[2], product);
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

/// Convolves an already padded N x C x D... input (1 to 3 spatial dims) with
/// an F x C/group x K... weight, accumulating into `init` (N x F x O...).
static Value createConvolution(OpBuilder &b, Location loc, Value input,
                               Value weight, Value init, int64_t group,
                               const Window &window) {
  unsigned rank = window.rank();
  if (group == 1) {
    if (rank == 1)
      return createWindowNamedOp<linalg::Conv1DNcwFcwOp>(
          b, loc, {input, weight}, init, window);
    if (rank == 2)
      return createWindowNamedOp<linalg::Conv2DNchwFchwOp>(
          b, loc, {input, weight}, init, window);
    return createWindowNamedOp<linalg::Conv3DNcdhwFcdhwOp>(
        b, loc, {input, weight}, init, window);
  }
  Value groupedInput = splitDim(b, loc, input, 1, group);
  Value groupedWeight = splitDim(b, loc, weight, 0, group);
  Value groupedInit = splitDim(b, loc, init, 1, group);
  Value result =
      rank == 2 ? createWindowNamedOp<linalg::Conv2DNgchwGfchwOp>(
                      b, loc, {groupedInput, groupedWeight}, groupedInit,
                      window)
                : createGroupedConvGeneric(b, loc, groupedInput, groupedWeight,
                                           groupedInit, window);
  return mergeDims(b, loc, result, 1);
}

/// The N x F x O... accumulator of a convolution: B broadcast along every
/// dim but the channel, or zeros without a bias.
static Value createConvInit(OpBuilder &b, Location loc, RankedTensorType type,
                            Value bias) {
  if (isa<NoneType>(bias.getType()))
    return createZeroTensor(b, loc, type);
  Value empty = createEmptyTensor(b, loc, type);
  SmallVector<int64_t> broadcastDims = {0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    broadcastDims.push_back(d);
  return linalg::BroadcastOp::create(b, loc, bias, empty, broadcastDims)
      .getResult()[0];
}

/// Checks what the lowering of a convolution needs beyond static shapes: a
/// float element type, 1 to 3 spatial dims (linalg's named convolutions).
static LogicalResult checkConvInput(Operation *op, RankedTensorType xType) {
  if (!isa<FloatType>(xType.getElementType()))
    return emitLoweringError(op) << "element type " << xType.getElementType()
                                 << " is not a float type";
  if (xType.getRank() > 5)
    return emitLoweringError(op)
           << xType.getRank() - 2
           << "-d convolution is not supported (1-d to 3-d)";
  return success();
}

namespace {

struct ConvLowering : ONNXToLinalgPattern<ONNXConvOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXConvOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    if (failed(checkConvInput(op, xType)))
      return failure();
    auto wType = cast<RankedTensorType>(adaptor.getW().getType());
    unsigned rank = xType.getRank() - 2;
    Window window;
    window.kernel.assign(wType.getShape().begin() + 2, wType.getShape().end());
    window.strides = intsOr(op.getStridesAttr(), rank, 1);
    window.dilations = intsOr(op.getDilationsAttr(), rank, 1);
    ArrayRef<int64_t> inputShape = xType.getShape().drop_front(2);
    ArrayRef<int64_t> outputShape = resultType.getShape().drop_front(2);
    if (failed(resolvePads(op, op.getAutoPad(), op.getPadsAttr(), inputShape,
                           outputShape, window)))
      return failure();

    Location loc = op.getLoc();
    Type elementType = xType.getElementType();
    Value padded = padSpatial(
        rewriter, loc, adaptor.getX(), window.padBegin,
        paddingForLastWindow(window, inputShape, outputShape),
        rewriter.getZeroAttr(elementType));
    Value init = createConvInit(rewriter, loc, resultType, adaptor.getB());
    rewriter.replaceOp(op, createConvolution(rewriter, loc, padded,
                                             adaptor.getW(), init,
                                             op.getGroup(), window));
    return success();
  }
};

/// ConvTranspose(X, W) with stride s, dilation d, pads (pb, pe) and
/// output_padding op equals, per spatial dim, a stride-1 convolution with
/// dilation d of X with s - 1 zeros inserted between elements and padded by
/// d(K-1) - pb before and d(K-1) - pe + op after, with the kernel flipped and
/// its two channel dims swapped per group. Negative paddings become a crop
/// of the convolution's result.
struct ConvTransposeLowering : ONNXToLinalgPattern<ONNXConvTransposeOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXConvTransposeOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    if (failed(checkConvInput(op, xType)))
      return failure();
    auto wType = cast<RankedTensorType>(adaptor.getW().getType());
    unsigned rank = xType.getRank() - 2;
    int64_t group = op.getGroup();
    SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
    SmallVector<int64_t> strides = intsOr(op.getStridesAttr(), rank, 1);
    SmallVector<int64_t> dilations = intsOr(op.getDilationsAttr(), rank, 1);
    SmallVector<int64_t> outputPadding =
        intsOr(op.getOutputPaddingAttr(), rank, 0);
    ArrayRef<int64_t> inputShape = xType.getShape().drop_front(2);
    ArrayRef<int64_t> outputShape = resultType.getShape().drop_front(2);

    // The output before pads are removed: s(I-1) + op + d(K-1) + 1.
    SmallVector<int64_t> fullShape;
    for (unsigned i = 0; i < rank; ++i)
      fullShape.push_back(strides[i] * (inputShape[i] - 1) + outputPadding[i] +
                          dilations[i] * (kernel[i] - 1) + 1);
    SmallVector<int64_t> padBegin(rank, 0), padEnd(rank, 0);
    StringRef autoPad = op.getAutoPad();
    if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
        autoPad != "SAME_LOWER")
      return emitLoweringError(op) << "unknown auto_pad '" << autoPad << "'";
    if (op.getOutputShapeAttr() || autoPad.starts_with("SAME")) {
      // Pads follow from the output shape (the result type); the odd one
      // goes at the end only for SAME_UPPER. An output larger than the full
      // one makes the total negative: ONNX halves it rounding down, so the
      // extra rows (bias only: no input reaches them) go at the end.
      for (unsigned i = 0; i < rank; ++i) {
        int64_t total = fullShape[i] - outputShape[i];
        int64_t half = llvm::divideFloorSigned(total, 2);
        padBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
        padEnd[i] = total - padBegin[i];
      }
    } else if (autoPad == "NOTSET") {
      SmallVector<int64_t> pads = intsOr(op.getPadsAttr(), 2 * rank, 0);
      padBegin.assign(pads.begin(), pads.begin() + rank);
      padEnd.assign(pads.begin() + rank, pads.end());
    }
    for (unsigned i = 0; i < rank; ++i)
      if (fullShape[i] - padBegin[i] - padEnd[i] != outputShape[i])
        return emitLoweringError(op)
               << "result spatial dimension " << i << " is " << outputShape[i]
               << ", expected " << fullShape[i] - padBegin[i] - padEnd[i];

    Location loc = op.getLoc();
    Type elementType = xType.getElementType();
    // Zero-inserted, padded input: X lands at stride s from max(L, 0).
    SmallVector<int64_t> spreadShape(xType.getShape().take_front(2));
    SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, steps(2, rewriter.getIndexAttr(1));
    SmallVector<int64_t> cropOffsets(2, 0);
    SmallVector<int64_t> convShape(resultType.getShape().take_front(2));
    for (int64_t size : xType.getShape())
      sizes.push_back(rewriter.getIndexAttr(size));
    for (unsigned i = 0; i < rank; ++i) {
      int64_t halo = dilations[i] * (kernel[i] - 1);
      int64_t low = halo - padBegin[i];
      int64_t high = halo - padEnd[i] + outputPadding[i];
      int64_t spread = strides[i] * (inputShape[i] - 1) + 1 +
                       std::max<int64_t>(low, 0) + std::max<int64_t>(high, 0);
      spreadShape.push_back(spread);
      offsets.push_back(rewriter.getIndexAttr(std::max<int64_t>(low, 0)));
      steps.push_back(rewriter.getIndexAttr(strides[i]));
      cropOffsets.push_back(std::max<int64_t>(-low, 0));
      convShape.push_back(spread - halo);
    }
    Value zeros = createZeroTensor(rewriter, loc, xType.clone(spreadShape));
    Value spreadInput = tensor::InsertSliceOp::create(
        rewriter, loc, adaptor.getX(), zeros, offsets, sizes, steps);

    // W is C x F/group x K...; the convolution wants F x C/group x K...
    // with W'[g*F/G + f, c, k] = W[g*C/G + c, f, K-1-k].
    Value weightByGroup = splitDim(rewriter, loc, adaptor.getW(), 0, group);
    auto groupedType = cast<RankedTensorType>(weightByGroup.getType());
    SmallVector<int64_t> flippedShape = {group, groupedType.getDimSize(2),
                                         groupedType.getDimSize(1)};
    llvm::append_range(flippedShape, kernel);
    MLIRContext *context = rewriter.getContext();
    unsigned numLoops = 3 + rank;
    SmallVector<AffineExpr> sourceExprs = dimExprs(context, {0, 2, 1});
    for (unsigned i = 0; i < rank; ++i)
      sourceExprs.push_back(kernel[i] - 1 -
                            getAffineDimExpr(3 + i, context));
    Value flippedEmpty = createEmptyTensor(
        rewriter, loc, RankedTensorType::get(flippedShape, elementType));
    Value flipped =
        linalg::GenericOp::create(
            rewriter, loc, flippedEmpty.getType(), weightByGroup, flippedEmpty,
            {AffineMap::get(numLoops, 0, sourceExprs, context),
             rewriter.getMultiDimIdentityMap(numLoops)},
            SmallVector<utils::IteratorType>(numLoops,
                                             utils::IteratorType::parallel),
            [](OpBuilder &nb, Location nloc, ValueRange args) {
              linalg::YieldOp::create(nb, nloc, args[0]);
            })
            .getResult(0);
    Value weight = mergeDims(rewriter, loc, flipped, 0);

    Window window;
    window.kernel = kernel;
    window.strides.assign(rank, 1);
    window.dilations = dilations;
    auto convType = resultType.clone(convShape);
    Value init = createConvInit(rewriter, loc, convType, adaptor.getB());
    Value result = createConvolution(rewriter, loc, spreadInput, weight, init,
                                     group, window);
    if (convType != resultType)
      result = tensor::ExtractSliceOp::create(
          rewriter, loc, resultType, result,
          getAsIndexOpFoldResult(context, cropOffsets),
          getAsIndexOpFoldResult(context, resultType.getShape()),
          SmallVector<OpFoldResult>(rank + 2, rewriter.getIndexAttr(1)));
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

/// Reduces each window of a padded N x C x D... input into `init` with
/// max or sum.
static Value createPooling(OpBuilder &b, Location loc, PoolKind kind,
                           Value input, Value init, const Window &window) {
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value windowShape = tensor::EmptyOp::create(b, loc, window.kernel, elementType);
  unsigned rank = window.rank();
  // The named ops compare with max_signed, so unsigned max needs a generic.
  if (kind != PoolKind::MaxUnsigned && rank <= 2) {
    if (kind == PoolKind::Max)
      return rank == 1 ? createWindowNamedOp<linalg::PoolingNcwMaxOp>(
                             b, loc, {input, windowShape}, init, window)
                       : createWindowNamedOp<linalg::PoolingNchwMaxOp>(
                             b, loc, {input, windowShape}, init, window);
    return rank == 1 ? createWindowNamedOp<linalg::PoolingNcwSumOp>(
                           b, loc, {input, windowShape}, init, window)
                     : createWindowNamedOp<linalg::PoolingNchwSumOp>(
                           b, loc, {input, windowShape}, init, window);
  }
  MLIRContext *context = b.getContext();
  unsigned numLoops = 2 + 2 * rank;
  SmallVector<AffineExpr> inputExprs = dimExprs(context, {0, 1});
  llvm::append_range(inputExprs,
                     windowInputExprs(context, window, 2, 2 + rank));
  SmallVector<unsigned> outDims = {0, 1}, kernelDims;
  for (unsigned i = 0; i < rank; ++i) {
    outDims.push_back(2 + i);
    kernelDims.push_back(2 + rank + i);
  }
  SmallVector<AffineMap> maps = {
      AffineMap::get(numLoops, 0, inputExprs, context),
      AffineMap::get(numLoops, 0, dimExprs(context, kernelDims), context),
      AffineMap::get(numLoops, 0, dimExprs(context, outDims), context)};
  SmallVector<utils::IteratorType> iterators(2 + rank,
                                             utils::IteratorType::parallel);
  iterators.append(rank, utils::IteratorType::reduction);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{input, windowShape}, init,
             maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value combined;
               if (kind == PoolKind::MaxUnsigned)
                 combined = arith::MaxUIOp::create(nb, nloc, args[0], args[2]);
               else if (isa<FloatType>(elementType))
                 combined =
                     kind == PoolKind::Max
                         ? arith::MaximumFOp::create(nb, nloc, args[0], args[2])
                               .getResult()
                         : arith::AddFOp::create(nb, nloc, args[0], args[2])
                               .getResult();
               else
                 combined =
                     kind == PoolKind::Max
                         ? arith::MaxSIOp::create(nb, nloc, args[0], args[2])
                               .getResult()
                         : arith::AddIOp::create(nb, nloc, args[0], args[2])
                               .getResult();
               linalg::YieldOp::create(nb, nloc, combined);
             })
      .getResult(0);
}

/// Average pooling of an N x C x D... float input: a sum pooling over the
/// zero-padded input divided by the number of elements each window counts,
/// which is the kernel size except where a window overlaps padding that
/// count_include_pad = 0 excludes, or (ceil_mode) the end beyond the pads.
static FailureOr<Value> createAveragePool(Operation *op, OpBuilder &b,
                                          Value input,
                                          RankedTensorType resultType,
                                          const Window &window,
                                          bool countIncludePad) {
  Location loc = op->getLoc();
  auto inputType = cast<RankedTensorType>(input.getType());
  Type elementType = inputType.getElementType();
  if (!isa<FloatType>(elementType))
    return emitLoweringError(op) << "element type " << elementType
                                 << " is not a float type";
  ArrayRef<int64_t> inputShape = inputType.getShape().drop_front(2);
  ArrayRef<int64_t> outputShape = resultType.getShape().drop_front(2);

  // Element count per output position, one factor per spatial dim: a dim
  // whose windows all count alike folds into one scalar, the others become
  // 1-d constant tensors.
  MLIRContext *context = b.getContext();
  unsigned numLoops = resultType.getRank();
  double uniformCount = 1;
  SmallVector<Value> countTensors;
  SmallVector<AffineMap> maps;
  for (unsigned i = 0; i < window.rank(); ++i) {
    int64_t low = countIncludePad ? -window.padBegin[i] : 0;
    int64_t high = countIncludePad ? inputShape[i] + window.padEnd[i]
                                   : inputShape[i];
    SmallVector<Attribute> counts;
    bool uniform = true;
    int64_t firstCount = 0;
    for (int64_t o = 0; o < outputShape[i]; ++o) {
      int64_t start = o * window.strides[i] - window.padBegin[i];
      int64_t count = 0;
      for (int64_t k = 0; k < window.kernel[i]; ++k) {
        int64_t position = start + k * window.dilations[i];
        count += position >= low && position < high;
      }
      if (count <= 0)
        return emitLoweringError(op) << "window " << o << " of spatial dimension "
                                 << i << " covers no input element";
      if (o == 0)
        firstCount = count;
      uniform &= count == firstCount;
      counts.push_back(b.getFloatAttr(elementType, count));
    }
    if (uniform) {
      uniformCount *= firstCount;
      continue;
    }
    auto countType = RankedTensorType::get({outputShape[i]}, elementType);
    countTensors.push_back(arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(countType, counts)));
    maps.push_back(AffineMap::get(numLoops, 0,
                                  getAffineDimExpr(2 + i, context)));
  }

  Value padded = padSpatial(b, loc, input, window.padBegin,
                            paddingForLastWindow(window, inputShape,
                                                 outputShape),
                            b.getZeroAttr(elementType));
  Value sums = createPooling(b, loc, PoolKind::Sum, padded,
                             createZeroTensor(b, loc, resultType),
                             window);
  Value uniform = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(elementType, uniformCount));
  maps.push_back(b.getMultiDimIdentityMap(numLoops));
  return linalg::GenericOp::create(
             b, loc, resultType, countTensors, sums, maps,
             SmallVector<utils::IteratorType>(numLoops,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value count = uniform;
               for (Value factor : args.drop_back())
                 count = arith::MulFOp::create(nb, nloc, count, factor);
               Value mean =
                   arith::DivFOp::create(nb, nloc, args.back(), count);
               linalg::YieldOp::create(nb, nloc, mean);
             })
      .getResult(0);
}

/// The lowest value of `type`: max pooling's padding and initial value.
static TypedAttr lowestValue(Type type, bool isUnsigned) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return FloatAttr::get(
        floatType, APFloat::getInf(floatType.getFloatSemantics(), true));
  unsigned width = type.getIntOrFloatBitWidth();
  return IntegerAttr::get(type, isUnsigned ? APInt::getZero(width)
                                           : APInt::getSignedMinValue(width));
}

/// Max pooling of a padded N x C x D... input that also yields, per output,
/// the flat index of its maximum in the unpadded input: row-major over
/// N x C x D... (storage_order 0) or with the spatial dims column-major
/// (storage_order 1). The first maximum in window order wins; padding holds
/// `lowest` and never compares greater, so it is never the argmax.
static std::pair<Value, Value>
createMaxPoolWithIndices(OpBuilder &b, Location loc, Value padded,
                         ArrayRef<int64_t> inputShape,
                         RankedTensorType resultType,
                         RankedTensorType indicesType, const Window &window,
                         TypedAttr lowest, bool isUnsigned,
                         bool columnMajor) {
  MLIRContext *context = b.getContext();
  Type elementType = resultType.getElementType();
  unsigned rank = window.rank();
  unsigned numLoops = 2 + 2 * rank;
  SmallVector<AffineExpr> inputExprs = dimExprs(context, {0, 1});
  llvm::append_range(inputExprs,
                     windowInputExprs(context, window, 2, 2 + rank));
  SmallVector<unsigned> outDims = {0, 1}, kernelDims;
  for (unsigned i = 0; i < rank; ++i) {
    outDims.push_back(2 + i);
    kernelDims.push_back(2 + rank + i);
  }
  AffineMap outMap = AffineMap::get(numLoops, 0, dimExprs(context, outDims),
                                    context);
  SmallVector<AffineMap> maps = {
      AffineMap::get(numLoops, 0, inputExprs, context),
      AffineMap::get(numLoops, 0, dimExprs(context, kernelDims), context),
      outMap, outMap};
  SmallVector<utils::IteratorType> iterators(2 + rank,
                                             utils::IteratorType::parallel);
  iterators.append(rank, utils::IteratorType::reduction);
  Value windowShape =
      tensor::EmptyOp::create(b, loc, window.kernel, elementType);
  Value valueInit = createFilledTensor(
      b, loc, resultType, arith::ConstantOp::create(b, loc, lowest));
  Value indexInit = createZeroTensor(b, loc, indicesType);
  Type indexElement = indicesType.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType, indicesType},
      ValueRange{padded, windowShape}, ValueRange{valueInit, indexInit}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto constant = [&](int64_t v) {
          return arith::ConstantIndexOp::create(nb, nloc, v).getResult();
        };
        // Spatial position in the unpadded input:
        // out * stride + k * dilation - padBegin.
        SmallVector<Value> spatial;
        for (unsigned i = 0; i < rank; ++i) {
          Value out = linalg::IndexOp::create(nb, nloc, 2 + i);
          Value k = linalg::IndexOp::create(nb, nloc, 2 + rank + i);
          Value pos = arith::AddIOp::create(
              nb, nloc, arith::MulIOp::create(nb, nloc, out,
                                              constant(window.strides[i])),
              arith::MulIOp::create(nb, nloc, k,
                                    constant(window.dilations[i])));
          spatial.push_back(arith::SubIOp::create(
              nb, nloc, pos, constant(window.padBegin[i])));
        }
        // Horner's rule over N, C, then the spatial dims in storage order.
        SmallVector<std::pair<Value, int64_t>> digits = {
            {linalg::IndexOp::create(nb, nloc, 0), inputShape[0]},
            {linalg::IndexOp::create(nb, nloc, 1), inputShape[1]}};
        for (unsigned i = 0; i < rank; ++i) {
          unsigned d = columnMajor ? rank - 1 - i : i;
          digits.push_back({spatial[d], inputShape[2 + d]});
        }
        Value flat = digits.front().first;
        for (auto [digit, size] : llvm::drop_begin(digits))
          flat = arith::AddIOp::create(
              nb, nloc, arith::MulIOp::create(nb, nloc, flat, constant(size)),
              digit);
        flat = arith::IndexCastOp::create(nb, nloc, indexElement, flat);
        Value greater =
            isa<FloatType>(elementType)
                ? arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OGT,
                                        args[0], args[2])
                      .getResult()
                : arith::CmpIOp::create(nb, nloc,
                                        isUnsigned ? arith::CmpIPredicate::ugt
                                                   : arith::CmpIPredicate::sgt,
                                        args[0], args[2])
                      .getResult();
        linalg::YieldOp::create(
            nb, nloc,
            ValueRange{
                arith::SelectOp::create(nb, nloc, greater, args[0], args[2]),
                arith::SelectOp::create(nb, nloc, greater, flat, args[3])});
      });
  return {generic.getResult(0), generic.getResult(1)};
}

/// Window attributes common to MaxPool and AveragePool, with pads resolved.
template <typename PoolOp>
static FailureOr<Window> poolWindow(PoolOp op, RankedTensorType inputType,
                                    RankedTensorType resultType,
                                    ArrayAttr dilations) {
  unsigned rank = inputType.getRank() - 2;
  Window window;
  window.kernel = intsOr(op.getKernelShapeAttr(), rank, 1);
  window.strides = intsOr(op.getStridesAttr(), rank, 1);
  window.dilations = intsOr(dilations, rank, 1);
  if (failed(resolvePads(op, op.getAutoPad(), op.getPadsAttr(),
                         inputType.getShape().drop_front(2),
                         resultType.getShape().drop_front(2), window)))
    return failure();
  return window;
}

namespace {

struct MaxPoolLowering : ONNXToLinalgPattern<ONNXMaxPoolOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXMaxPoolOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    if (op.getStorageOrder() != 0 && op.getStorageOrder() != 1)
      return emitLoweringError(op) << "storage_order must be 0 or 1";
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    FailureOr<Window> window =
        poolWindow(op, xType, resultType, op.getDilationsAttr());
    if (failed(window))
      return failure();
    Type elementType = xType.getElementType();
    bool isUnsigned = getElementTypeOrSelf(op.getX().getType())
                          .isUnsignedInteger();
    TypedAttr lowest = lowestValue(elementType, isUnsigned);
    Location loc = op.getLoc();
    Value padded = padSpatial(
        rewriter, loc, adaptor.getX(), window->padBegin,
        paddingForLastWindow(*window, xType.getShape().drop_front(2),
                             resultType.getShape().drop_front(2)),
        lowest);
    if (!isa<NoneType>(op.getIndices().getType())) {
      auto [values, indices] = createMaxPoolWithIndices(
          rewriter, loc, padded, xType.getShape(), resultType,
          convertTensorType(op.getIndices().getType()), *window, lowest,
          isUnsigned, op.getStorageOrder() == 1);
      rewriter.replaceOp(op, ValueRange{values, indices});
      return success();
    }
    Value init = createFilledTensor(
        rewriter, loc, resultType,
        arith::ConstantOp::create(rewriter, loc, lowest));
    rewriter.replaceOp(op, createPooling(rewriter, loc,
                                         isUnsigned ? PoolKind::MaxUnsigned
                                                    : PoolKind::Max,
                                         padded, init, *window));
    return success();
  }
};

struct AveragePoolLowering : ONNXToLinalgPattern<ONNXAveragePoolOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXAveragePoolOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    FailureOr<Window> window =
        poolWindow(op, xType, resultType, op.getDilationsAttr());
    if (failed(window))
      return failure();
    FailureOr<Value> result =
        createAveragePool(op, rewriter, adaptor.getX(), resultType, *window,
                          op.getCountIncludePad() != 0);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// GlobalAveragePool is an AveragePool whose one window is the whole image.
struct GlobalAveragePoolLowering : ONNXToLinalgPattern<ONNXGlobalAveragePoolOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXGlobalAveragePoolOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    if (xType.getRank() < 3)
      return emitLoweringError(op) << "input X must have rank >= 3 (N x C x D1...)";
    unsigned rank = xType.getRank() - 2;
    Window window;
    window.kernel.assign(xType.getShape().begin() + 2, xType.getShape().end());
    window.strides.assign(rank, 1);
    window.dilations.assign(rank, 1);
    window.padBegin.assign(rank, 0);
    window.padEnd.assign(rank, 0);
    FailureOr<Value> result = createAveragePool(
        op, rewriter, adaptor.getX(), resultType, window,
        /*countIncludePad=*/true);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

} // namespace

void vram::populateConvPoolToLinalgPatterns(const TypeConverter &typeConverter,
                                            RewritePatternSet &patterns) {
  patterns.add<ConvLowering, ConvTransposeLowering, MaxPoolLowering,
               AveragePoolLowering, GlobalAveragePoolLowering>(
      typeConverter, patterns.getContext());
}
