//===- Reduction.cpp - onnx ReduceSum and ReduceMean to linalg.reduce -----===//
//
// Both become a linalg.reduce into a zero-filled accumulator of the reduced
// shape (ReduceMean then divides by the number of reduced elements);
// keepdims=1 is a tensor.expand_shape of that result, a view.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// Sums `data` over `axes` (normalised), divides by the count when `mean`,
/// and reshapes to `resultType` (which has or lacks the kept unit dims).
Value buildReduction(OpBuilder &builder, Location loc, Value data,
                     ArrayRef<int64_t> axes, bool mean, bool isUnsigned,
                     RankedTensorType resultType) {
  auto dataType = cast<RankedTensorType>(data.getType());
  Type elementType = dataType.getElementType();
  bool isFloat = isa<FloatType>(elementType);
  SmallVector<int64_t> sortedAxes(axes);
  llvm::sort(sortedAxes);
  SmallVector<int64_t> reducedShape;
  int64_t count = 1;
  for (auto [dim, size] : llvm::enumerate(dataType.getShape())) {
    if (llvm::is_contained(sortedAxes, static_cast<int64_t>(dim)))
      count *= size;
    else
      reducedShape.push_back(size);
  }
  auto reducedType = RankedTensorType::get(reducedShape, elementType);
  Value sum =
      linalg::ReduceOp::create(
          builder, loc, ValueRange{data},
          ValueRange{createZeroTensor(builder, loc, reducedType)}, sortedAxes,
          [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
            Value added = isFloat
                              ? Value(arith::AddFOp::create(b, nestedLoc,
                                                            args[0], args[1]))
                              : Value(arith::AddIOp::create(b, nestedLoc,
                                                            args[0], args[1]));
            linalg::YieldOp::create(b, nestedLoc, added);
          })
          .getResult(0);
  if (mean && count != 1) {
    sum = buildElementwiseGeneric(
        builder, loc, reducedType, ValueRange{sum},
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          Value divisor =
              createScalarConstant(b, nestedLoc, elementType, count);
          if (isFloat)
            return arith::DivFOp::create(b, nestedLoc, args[0], divisor);
          if (isUnsigned)
            return arith::DivUIOp::create(b, nestedLoc, args[0], divisor);
          return arith::DivSIOp::create(b, nestedLoc, args[0], divisor);
        });
  }
  return reshapeTensor(builder, loc, sum, resultType);
}

/// Checks that the reduced shape of `dataType` over `axes` with `keepdims`
/// is `resultType`'s, so shape inference and the lowering agree.
LogicalResult checkResultShape(Operation *op, RankedTensorType dataType,
                               ArrayRef<int64_t> axes, bool keepdims,
                               RankedTensorType resultType) {
  SmallVector<int64_t> expected;
  for (auto [dim, size] : llvm::enumerate(dataType.getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(dim)))
      expected.push_back(size);
    else if (keepdims)
      expected.push_back(1);
  }
  if (ArrayRef<int64_t>(expected) != resultType.getShape())
    return emitLoweringError(op)
           << "result type " << resultType
           << " does not match the reduced shape of " << dataType;
  return success();
}

/// The axes a reduction of `dataType` to `resultType` must have reduced,
/// for axes only known at run time; std::nullopt when the shapes leave it
/// open. With keepdims the reduced dimensions are those that became 1 (a
/// dimension of size 1 gives the same values either way). Without, the
/// kept dimensions are an embedding of the result shape in the input
/// shape, which must be unique: then its leftmost and rightmost embeddings
/// coincide (every embedding lies between them).
std::optional<SmallVector<int64_t>>
axesFromResultShape(RankedTensorType dataType, RankedTensorType resultType,
                    bool keepdims) {
  ArrayRef<int64_t> data = dataType.getShape();
  ArrayRef<int64_t> result = resultType.getShape();
  SmallVector<int64_t> axes;
  if (keepdims) {
    if (data.size() != result.size())
      return std::nullopt;
    for (auto [dim, sizes] : llvm::enumerate(llvm::zip(data, result)))
      if (std::get<0>(sizes) != std::get<1>(sizes))
        axes.push_back(dim);
    return axes;
  }
  auto embed = [&](bool fromLeft) -> std::optional<SmallVector<int64_t>> {
    SmallVector<int64_t> kept(result.size());
    int64_t dim = fromLeft ? 0 : data.size() - 1;
    for (size_t k = 0; k < result.size(); ++k) {
      size_t i = fromLeft ? k : result.size() - 1 - k;
      while (dim >= 0 && dim < static_cast<int64_t>(data.size()) &&
             data[dim] != result[i])
        dim += fromLeft ? 1 : -1;
      if (dim < 0 || dim >= static_cast<int64_t>(data.size()))
        return std::nullopt;
      kept[i] = dim;
      dim += fromLeft ? 1 : -1;
    }
    return kept;
  };
  std::optional<SmallVector<int64_t>> leftmost = embed(true);
  std::optional<SmallVector<int64_t>> rightmost = embed(false);
  if (!leftmost || !rightmost || *leftmost != *rightmost)
    return std::nullopt;
  for (int64_t dim = 0; dim < static_cast<int64_t>(data.size()); ++dim)
    if (!llvm::is_contained(*leftmost, dim))
      axes.push_back(dim);
  return axes;
}

SmallVector<int64_t> allAxes(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}

class ReduceMeanLowering : public ONNXToLinalgPattern<ONNXReduceMeanOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXReduceMeanOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getReduced().getType());
    if (dataType.getElementType().isInteger(1))
      return emitLoweringError(op) << "expects numeric elements";
    // ReduceMean-13 takes its axes as an attribute; absent means all.
    SmallVector<int64_t> axes = allAxes(dataType.getRank());
    if (std::optional<ArrayAttr> attr = op.getAxes()) {
      SmallVector<int64_t> given;
      for (Attribute axis : *attr)
        given.push_back(cast<IntegerAttr>(axis).getInt());
      FailureOr<SmallVector<int64_t>> normalized =
          normalizeAxes(op, given, dataType.getRank());
      if (failed(normalized))
        return failure();
      axes = std::move(*normalized);
    }
    bool keepdims = op.getKeepdims() != 0;
    if (failed(checkResultShape(op, dataType, axes, keepdims, resultType)))
      return failure();
    rewriter.replaceOp(
        op,
        buildReduction(rewriter, op.getLoc(), adaptor.getData(), axes,
                       /*mean=*/true, isUnsignedOrBool(op.getData().getType()),
                       resultType));
    return success();
  }
};

class ReduceSumLowering : public ONNXToLinalgPattern<ONNXReduceSumOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXReduceSumOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getReduced().getType());
    if (dataType.getElementType().isInteger(1))
      return emitLoweringError(op) << "expects numeric elements";
    // ReduceSum-13 takes its axes as an input. One computed at run time
    // can still be lowered when it is statically empty (its type has no
    // elements) or when the static result shape says which dimensions it
    // reduced; its values are then redundant.
    bool keepdims = op.getKeepdims() != 0;
    SmallVector<int64_t> given;
    Type axesType = op.getAxes().getType();
    auto shapedAxes = dyn_cast<ShapedType>(axesType);
    bool staticallyEmpty = shapedAxes && shapedAxes.hasStaticShape() &&
                           shapedAxes.getNumElements() == 0;
    if (!isa<NoneType>(axesType) && !staticallyEmpty) {
      std::optional<SmallVector<int64_t>> values =
          getConstantIntValues(op.getAxes(), adaptor.getAxes());
      if (!values) {
        values = axesFromResultShape(dataType, resultType, keepdims);
        if (!values)
          return emitLoweringError(op)
                 << "axes must be a constant: the result type " << resultType
                 << " does not say which dimensions of " << dataType
                 << " are reduced";
        if (values->empty()) {
          // The result type says nothing is reduced: the input unchanged,
          // whatever the run-time axes and noop_with_empty_axes.
          rewriter.replaceOp(op, adaptor.getData());
          return success();
        }
      }
      given = std::move(*values);
    }
    if (given.empty() && op.getNoopWithEmptyAxes() != 0) {
      // No axes and noop_with_empty_axes: the input unchanged.
      if (dataType != resultType)
        return emitLoweringError(op)
               << "result type " << resultType << " differs from the input";
      rewriter.replaceOp(op, adaptor.getData());
      return success();
    }
    SmallVector<int64_t> axes = allAxes(dataType.getRank());
    if (!given.empty()) {
      FailureOr<SmallVector<int64_t>> normalized =
          normalizeAxes(op, given, dataType.getRank());
      if (failed(normalized))
        return failure();
      axes = std::move(*normalized);
    }
    if (failed(checkResultShape(op, dataType, axes, keepdims, resultType)))
      return failure();
    rewriter.replaceOp(op, buildReduction(rewriter, op.getLoc(),
                                          adaptor.getData(), axes,
                                          /*mean=*/false,
                                          /*isUnsigned=*/false, resultType));
    return success();
  }
};

} // namespace

void vram::populateReductionToLinalgPatterns(const TypeConverter &typeConverter,
                                             RewritePatternSet &patterns) {
  patterns.add<ReduceMeanLowering, ReduceSumLowering>(typeConverter,
                                                      patterns.getContext());
}
