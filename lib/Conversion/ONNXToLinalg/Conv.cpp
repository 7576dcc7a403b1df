//===- Conv.cpp - Conv and ConvTranspose to linalg -----------------------===//
//
// Convolutions become linalg convolution named ops on a zero-padded input
// (grouped 2-d ones in the ngchw/gfchw form, other grouped ones a
// linalg.generic); a transposed convolution is the convolution of the
// zero-inserted input with the flipped, transposed kernel.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "Window.h"
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
               Value product =
                   arith::MulFOp::create(nb, nloc, args[0], args[1]);
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
      rank == 2
          ? createWindowNamedOp<linalg::Conv2DNgchwGfchwOp>(
                b, loc, {groupedInput, groupedWeight}, groupedInit, window)
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

  LogicalResult lower(ONNXConvOp op, OpAdaptor adaptor,
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
    Value padded =
        padSpatial(rewriter, loc, adaptor.getX(), window.padBegin,
                   paddingForLastWindow(window, inputShape, outputShape),
                   rewriter.getZeroAttr(elementType));
    Value init = createConvInit(rewriter, loc, resultType, adaptor.getB());
    rewriter.replaceOp(op,
                       createConvolution(rewriter, loc, padded, adaptor.getW(),
                                         init, op.getGroup(), window));
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

  LogicalResult lower(ONNXConvTransposeOp op, OpAdaptor adaptor,
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
      sourceExprs.push_back(kernel[i] - 1 - getAffineDimExpr(3 + i, context));
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

void vram::populateConvToLinalgPatterns(const TypeConverter &typeConverter,
                                        RewritePatternSet &patterns) {
  patterns.add<ConvLowering, ConvTransposeLowering>(typeConverter,
                                                    patterns.getContext());
}
