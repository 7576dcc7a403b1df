//===- Pool.cpp - MaxPool, AveragePool and GlobalAveragePool to linalg ---===//
//
// Pooling uses linalg.pooling_nc*w_{max,sum} for 1-d and 2-d windows and
// linalg.generic otherwise; AveragePool then divides by each window's
// element count. MaxPool's Indices output comes from one linalg.generic
// yielding both each window's maximum and its flat position.
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

namespace {
enum class PoolKind { Max, MaxUnsigned, Sum };
} // namespace

/// Reduces each window of a padded N x C x D... input into `init` with
/// max or sum.
static Value createPooling(OpBuilder &b, Location loc, PoolKind kind,
                           Value input, Value init, const Window &window) {
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  Value windowShape =
      tensor::EmptyOp::create(b, loc, window.kernel, elementType);
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
             b, loc, init.getType(), ValueRange{input, windowShape}, init, maps,
             iterators,
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
    return emitLoweringError(op)
           << "element type " << elementType << " is not a float type";
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
    int64_t high =
        countIncludePad ? inputShape[i] + window.padEnd[i] : inputShape[i];
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
        return emitLoweringError(op)
               << "window " << o << " of spatial dimension " << i
               << " covers no input element";
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
    maps.push_back(
        AffineMap::get(numLoops, 0, getAffineDimExpr(2 + i, context)));
  }

  Value padded =
      padSpatial(b, loc, input, window.padBegin,
                 paddingForLastWindow(window, inputShape, outputShape),
                 b.getZeroAttr(elementType));
  Value sums = createPooling(b, loc, PoolKind::Sum, padded,
                             createZeroTensor(b, loc, resultType), window);
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
               Value mean = arith::DivFOp::create(nb, nloc, args.back(), count);
               linalg::YieldOp::create(nb, nloc, mean);
             })
      .getResult(0);
}

/// The lowest value of `type`: max pooling's padding and initial value.
static TypedAttr lowestValue(Type type, bool isUnsigned) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return FloatAttr::get(floatType,
                          APFloat::getInf(floatType.getFloatSemantics(), true));
  unsigned width = type.getIntOrFloatBitWidth();
  return IntegerAttr::get(type, isUnsigned ? APInt::getZero(width)
                                           : APInt::getSignedMinValue(width));
}

/// Max pooling of a padded N x C x D... input that also yields, per output,
/// the flat index of its maximum in the unpadded input: row-major over
/// N x C x D... (storage_order 0) or with the spatial dims column-major
/// (storage_order 1). The first maximum in window order wins; padding holds
/// `lowest` and never compares greater, so it is never the argmax.
static std::pair<Value, Value> createMaxPoolWithIndices(
    OpBuilder &b, Location loc, Value padded, ArrayRef<int64_t> inputShape,
    RankedTensorType resultType, RankedTensorType indicesType,
    const Window &window, TypedAttr lowest, bool isUnsigned, bool columnMajor) {
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
  AffineMap outMap =
      AffineMap::get(numLoops, 0, dimExprs(context, outDims), context);
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
              nb, nloc,
              arith::MulIOp::create(nb, nloc, out, constant(window.strides[i])),
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

  LogicalResult lower(ONNXMaxPoolOp op, OpAdaptor adaptor,
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
    bool isUnsigned =
        getElementTypeOrSelf(op.getX().getType()).isUnsignedInteger();
    TypedAttr lowest = lowestValue(elementType, isUnsigned);
    Location loc = op.getLoc();
    Value padded =
        padSpatial(rewriter, loc, adaptor.getX(), window->padBegin,
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
    Value init =
        createFilledTensor(rewriter, loc, resultType,
                           arith::ConstantOp::create(rewriter, loc, lowest));
    rewriter.replaceOp(
        op, createPooling(rewriter, loc,
                          isUnsigned ? PoolKind::MaxUnsigned : PoolKind::Max,
                          padded, init, *window));
    return success();
  }
};

struct AveragePoolLowering : ONNXToLinalgPattern<ONNXAveragePoolOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXAveragePoolOp op, OpAdaptor adaptor,
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
struct GlobalAveragePoolLowering
    : ONNXToLinalgPattern<ONNXGlobalAveragePoolOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXGlobalAveragePoolOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultType = convertTensorType(op.getY().getType());
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    if (xType.getRank() < 3)
      return emitLoweringError(op)
             << "input X must have rank >= 3 (N x C x D1...)";
    unsigned rank = xType.getRank() - 2;
    Window window;
    window.kernel.assign(xType.getShape().begin() + 2, xType.getShape().end());
    window.strides.assign(rank, 1);
    window.dilations.assign(rank, 1);
    window.padBegin.assign(rank, 0);
    window.padEnd.assign(rank, 0);
    FailureOr<Value> result =
        createAveragePool(op, rewriter, adaptor.getX(), resultType, window,
                          /*countIncludePad=*/true);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

} // namespace

void vram::populatePoolToLinalgPatterns(const TypeConverter &typeConverter,
                                        RewritePatternSet &patterns) {
  patterns.add<MaxPoolLowering, AveragePoolLowering, GlobalAveragePoolLowering>(
      typeConverter, patterns.getContext());
}
