//===- Resize.cpp - onnx.Resize to linalg --------------------------------===//
//
// Shapes are static, so Resize's per-dimension source indices and weights,
// which depend on one output coordinate only, are known at compile time
// (vram/Dialect/ONNX/ResizeSampling.h) and passed to a linalg.generic as
// small constant tables; the generic reads the taps with tensor.extract.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/ResizeSampling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// A 1-d i64 constant tensor holding `values`.
Value createIndexTable(OpBuilder &builder, Location loc,
                       ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder.getI64Type());
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, values));
}

/// A 1-d constant tensor of float `elementType` holding `values`.
Value createFloatTable(OpBuilder &builder, Location loc, Type elementType,
                       ArrayRef<double> values) {
  auto type =
      RankedTensorType::get({static_cast<int64_t>(values.size())}, elementType);
  return arith::ConstantOp::create(builder, loc,
                                   getFloatElements(type, values));
}

/// The map reading a 1-d table at result dimension `dim`.
AffineMap tableMap(MLIRContext *context, unsigned rank, unsigned dim) {
  return AffineMap::get(rank, 0, getAffineDimExpr(dim, context), context);
}

/// A table-driven gather: element i of the result is `source` at
/// (t_0[i_0], ..., t_{n-1}[i_{n-1}]), where t_d = tables[d], or i_d itself
/// where tables[d] is empty.
Value buildTableGather(OpBuilder &builder, Location loc, Value source,
                       RankedTensorType resultType,
                       ArrayRef<SmallVector<int64_t>> tables) {
  MLIRContext *context = builder.getContext();
  unsigned rank = resultType.getRank();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (auto [dim, table] : llvm::enumerate(tables)) {
    if (table.empty())
      continue;
    inputs.push_back(createIndexTable(builder, loc, table));
    maps.push_back(tableMap(context, rank, dim));
  }
  return buildParallelGeneric(
      builder, loc, resultType, inputs, maps,
      [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
        SmallVector<Value> indices;
        auto next = args.begin();
        for (auto [dim, table] : llvm::enumerate(tables)) {
          if (table.empty())
            indices.push_back(linalg::IndexOp::create(b, nestedLoc, dim));
          else
            indices.push_back(arith::IndexCastOp::create(
                b, nestedLoc, b.getIndexType(), *next++));
        }
        return tensor::ExtractOp::create(b, nestedLoc, source, indices);
      });
}

/// The most input values one Resize output mixes (the product of the
/// resized dimensions' tap counts), each unrolled into the loop body: 4096
/// covers antialiased cubic downscaling by 8 in two dimensions.
constexpr uint64_t kMaxInterpolationTerms = 4096;

class ResizeLowering : public ONNXToLinalgPattern<ONNXResizeOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXResizeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getX();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = convertTensorType(op.getY().getType());
    Type elementType = resultType.getElementType();
    StringRef mode = op.getMode();
    StringRef transform = op.getCoordinateTransformationMode();
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return emitLoweringError(op) << "mode '" << mode << "' is not supported";
    if (mode != "nearest" && !isa<FloatType>(elementType))
      return emitLoweringError(op) << mode << " mode needs float elements";

    // The scales when the op has them (exporters pass an empty `scales`
    // alongside `sizes`); the roi for tf_crop_and_resize.
    SmallVector<double> scales, roi;
    if (!isa<NoneType>(op.getScales().getType())) {
      std::optional<SmallVector<double>> given =
          getConstantFloatValues(op.getScales());
      if (!given)
        given = getConstantFloatValues(adaptor.getScales());
      if (!given)
        return emitLoweringError(op) << "'scales' must be a constant";
      scales = std::move(*given);
    }
    if (transform == "tf_crop_and_resize" &&
        !isa<NoneType>(op.getRoi().getType()))
      if (std::optional<SmallVector<double>> given =
              getConstantFloatValues(op.getRoi()))
        roi = std::move(*given);
    FailureOr<ResizeSampling> sampling =
        getResizeSampling(op, inputType, resultType, scales, roi,
                          [&] { return emitLoweringError(op); });
    if (failed(sampling))
      return failure();

    Value result;
    if (mode == "nearest") {
      result = buildNearest(op, rewriter, input, resultType, *sampling);
    } else {
      FailureOr<Value> interpolated =
          buildInterpolation(op, rewriter, input, resultType, *sampling);
      if (failed(interpolated))
        return failure();
      result = *interpolated;
    }
    if (sampling->extrapolates)
      result = applyExtrapolation(op, rewriter, result, inputType,
                                  sampling->coordinates);
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  /// Nearest: one tap per resized dimension.
  static Value buildNearest(ONNXResizeOp op, OpBuilder &builder, Value input,
                            RankedTensorType resultType,
                            const ResizeSampling &sampling) {
    auto inputType = cast<RankedTensorType>(input.getType());
    SmallVector<SmallVector<int64_t>> tables(resultType.getRank());
    for (int64_t dim = 0; dim < resultType.getRank(); ++dim)
      if (!sampling.identity[dim])
        tables[dim] = std::move(
            getResizeTaps(op, sampling, dim, inputType.getDimSize(dim))
                .indices[0]);
    return buildTableGather(builder, op.getLoc(), input, resultType, tables);
  }

  /// Linear and cubic: the tensor product of 1-d interpolations (the taps
  /// of getResizeTaps) of each resized dimension. Weights are computed in
  /// double precision and stored in the element type.
  static FailureOr<Value> buildInterpolation(ONNXResizeOp op,
                                             OpBuilder &builder, Value input,
                                             RankedTensorType resultType,
                                             const ResizeSampling &sampling) {
    Location loc = op.getLoc();
    MLIRContext *context = builder.getContext();
    auto inputType = cast<RankedTensorType>(input.getType());
    Type elementType = resultType.getElementType();
    unsigned rank = resultType.getRank();
    // Generic inputs: per resized dimension, its taps' index tables then
    // their weight tables.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<int64_t> resized, tapCounts;
    uint64_t combinations = 1;
    for (unsigned dim = 0; dim < rank; ++dim) {
      if (sampling.identity[dim])
        continue;
      auto [indices, weights] =
          getResizeTaps(op, sampling, dim, inputType.getDimSize(dim));
      int64_t taps = indices.size();
      // Every combination of taps is unrolled into the loop body.
      combinations *= taps;
      if (combinations > kMaxInterpolationTerms)
        return emitLoweringError(op)
               << "interpolates more than " << kMaxInterpolationTerms
               << " input values per output (antialiasing at scales "
               << sampling.scales << ")";
      for (int64_t tap = 0; tap < taps; ++tap)
        inputs.push_back(createIndexTable(builder, loc, indices[tap]));
      for (int64_t tap = 0; tap < taps; ++tap)
        inputs.push_back(
            createFloatTable(builder, loc, elementType, weights[tap]));
      for (int64_t i = 0; i < 2 * taps; ++i)
        maps.push_back(tableMap(context, rank, dim));
      resized.push_back(dim);
      tapCounts.push_back(taps);
    }
    return buildParallelGeneric(
        builder, loc, resultType, inputs, maps,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          SmallVector<Value> position;
          for (unsigned dim = 0; dim < rank; ++dim)
            position.push_back(linalg::IndexOp::create(b, nestedLoc, dim));
          // Each combination of one tap per resized dimension: weight the
          // product of the taps' weights, value the input there.
          Value sum;
          for (uint64_t combination = 0; combination < combinations;
               ++combination) {
            Value weight;
            uint64_t rest = combination;
            ValueRange dimArgs = args;
            for (auto [dim, taps] : llvm::zip(resized, tapCounts)) {
              int64_t tap = rest % taps;
              rest /= taps;
              position[dim] = arith::IndexCastOp::create(
                  b, nestedLoc, b.getIndexType(), dimArgs[tap]);
              Value factor = dimArgs[taps + tap];
              dimArgs = dimArgs.drop_front(2 * taps);
              weight = weight ? Value(arith::MulFOp::create(b, nestedLoc,
                                                            weight, factor))
                              : factor;
            }
            Value value =
                tensor::ExtractOp::create(b, nestedLoc, input, position);
            Value term = arith::MulFOp::create(b, nestedLoc, weight, value);
            sum = sum ? Value(arith::AddFOp::create(b, nestedLoc, sum, term))
                      : term;
          }
          return sum;
        });
  }

  /// tf_crop_and_resize: outputs whose source coordinate lies outside the
  /// input in any dimension take extrapolation_value.
  static Value applyExtrapolation(ONNXResizeOp op, OpBuilder &builder,
                                  Value resized, RankedTensorType inputType,
                                  ArrayRef<SmallVector<double>> coordinates) {
    Location loc = op.getLoc();
    MLIRContext *context = builder.getContext();
    auto resultType = cast<RankedTensorType>(resized.getType());
    unsigned rank = resultType.getRank();
    SmallVector<Value> inputs = {resized};
    SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank)};
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      SmallVector<int64_t> inside;
      for (double coordinate : dimCoordinates)
        inside.push_back(coordinate >= 0 &&
                         coordinate <= inputType.getDimSize(dim) - 1);
      if (llvm::all_of(inside, [](int64_t flag) { return flag; }))
        continue;
      inputs.push_back(createIndexTable(builder, loc, inside));
      maps.push_back(tableMap(context, rank, dim));
    }
    double fill = op.getExtrapolationValue().convertToDouble();
    Type elementType = resultType.getElementType();
    return buildParallelGeneric(
        builder, loc, resultType, inputs, maps,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          Value zero = createScalarConstant(b, nestedLoc, b.getI64Type(), 0);
          Value result = args[0];
          Value fillValue =
              createScalarConstant(b, nestedLoc, elementType, fill);
          for (Value inside : args.drop_front()) {
            Value isInside = arith::CmpIOp::create(
                b, nestedLoc, arith::CmpIPredicate::ne, inside, zero);
            result = arith::SelectOp::create(b, nestedLoc, isInside, result,
                                             fillValue);
          }
          return result;
        });
  }
};

} // namespace

void vram::populateResizeToLinalgPatterns(const TypeConverter &typeConverter,
                                          RewritePatternSet &patterns) {
  patterns.add<ResizeLowering>(typeConverter, patterns.getContext());
}
