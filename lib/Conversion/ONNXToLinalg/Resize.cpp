//===- Resize.cpp - onnx.Resize to linalg --------------------------------===//
//
// Shapes are static, so Resize's per-dimension source indices and weights,
// which depend on one output coordinate only, are computed here, in double
// precision as the ONNX reference does, and passed to a linalg.generic as
// small constant tables; the generic reads the taps with tensor.extract.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

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
  auto floatType = cast<FloatType>(elementType);
  SmallVector<APFloat> elements;
  for (double value : values) {
    APFloat element(value);
    bool losesInfo;
    element.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
    elements.push_back(element);
  }
  auto type =
      RankedTensorType::get({static_cast<int64_t>(values.size())}, elementType);
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, elements));
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

/// How output index x of one dimension maps to a source coordinate, per the
/// ONNX coordinate_transformation_mode (as the ONNX reference computes it:
/// `length` is scale * input size, unrounded).
std::optional<double> sourceCoordinate(StringRef mode, double x, int64_t inSize,
                                       int64_t outSize, double scale,
                                       double roiStart, double roiEnd) {
  double length = scale * inSize;
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return length > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  if (mode == "align_corners")
    return length == 1 ? 0.0 : x * (inSize - 1) / (length - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = outSize / length;
    double offset = inSize / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "tf_crop_and_resize") {
    double span = (roiEnd - roiStart) * (inSize - 1);
    double coordinate = length == 1 ? span / 2 : x * span / (length - 1);
    return coordinate + roiStart * (inSize - 1);
  }
  return std::nullopt;
}

/// The input indices (edge-clamped into [0, inSize)) and weights one output
/// value of one dimension mixes at source coordinate `x`: linear (2 taps)
/// or cubic (4 taps) interpolation, more with antialiasing.
struct InterpolationTaps {
  SmallVector<int64_t, 4> indices;
  SmallVector<double, 4> weights;
};

/// The taps per output of one dimension: with `antialias` and a downscaling
/// `scale`, the kernel is stretched by 1 / scale, so it spans
/// 2 (1 - floor(-r / scale) - 1) taps for a kernel of radius r (1 linear,
/// 2 cubic); otherwise 2 r.
int64_t interpolationTapCount(bool cubic, bool antialias, double scale) {
  double radius = cubic ? 2 : 1;
  if (!antialias || scale >= 1)
    return 2 * radius;
  return 2 - 2 * (static_cast<int64_t>(std::floor(-radius / scale)) + 1);
}

/// As the ONNX reference interpolates: the taps are the n indices nearest
/// to x (ties to the lower one) within the input edge-padded by n/2 on each
/// side, so an integral x sits on tap n/2 with ratio 1; linear weights are
/// the triangle kernel, cubic ones Keys' kernel with parameter `cubicA`,
/// each at distance (tap - n/2 + 1 - ratio) x min(1, scale) with
/// `antialias` (then normalised to sum 1), else at the plain distance; with
/// `excludeOutside`, taps outside the input get weight 0 and the rest are
/// renormalised.
InterpolationTaps interpolationTaps(double x, int64_t inSize, bool cubic,
                                    double cubicA, bool excludeOutside,
                                    bool antialias, double scale) {
  int64_t taps = interpolationTapCount(cubic, antialias, scale);
  double floor = std::floor(x);
  double ratio = x == floor ? 1.0 : x - floor;
  int64_t first = static_cast<int64_t>(std::ceil(x)) - taps / 2;
  first = std::clamp<int64_t>(first, -taps / 2, inSize + taps / 2 - taps);
  auto kernel = [&](double d) {
    d = std::abs(d);
    if (!cubic)
      return std::max(0.0, 1 - d);
    if (d <= 1)
      return ((cubicA + 2) * d - (cubicA + 3)) * d * d + 1;
    if (d < 2)
      return ((cubicA * d - 5 * cubicA) * d + 8 * cubicA) * d - 4 * cubicA;
    return 0.0;
  };
  double stretch = antialias ? std::min(1.0, scale) : 1.0;
  SmallVector<double, 4> weights;
  double kernelSum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    weights.push_back(kernel((tap - taps / 2 + 1 - ratio) * stretch));
    kernelSum += weights.back();
  }
  InterpolationTaps result;
  double sum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    if (antialias)
      weights[tap] /= kernelSum;
    int64_t index = first + tap;
    if (excludeOutside && (index < 0 || index >= inSize))
      weights[tap] = 0;
    sum += weights[tap];
    result.indices.push_back(std::clamp<int64_t>(index, 0, inSize - 1));
  }
  for (double weight : weights)
    result.weights.push_back(excludeOutside ? weight / sum : weight);
  return result;
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
    int64_t rank = inputType.getRank();
    StringRef mode = op.getMode();
    StringRef transform = op.getCoordinateTransformationMode();
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return emitLoweringError(op) << "mode '" << mode << "' is not supported";
    if (mode != "nearest" && !isa<FloatType>(elementType))
      return emitLoweringError(op) << mode << " mode needs float elements";

    // Per-dimension scales: from `scales` when it has values (exporters
    // pass an empty one alongside `sizes`), else output / input size.
    SmallVector<double> scales;
    if (!isa<NoneType>(op.getScales().getType())) {
      std::optional<SmallVector<double>> given =
          getConstantFloatValues(op.getScales());
      if (!given)
        given = getConstantFloatValues(adaptor.getScales());
      if (!given)
        return emitLoweringError(op) << "'scales' must be a constant";
      scales = std::move(*given);
    }
    if (scales.empty()) {
      for (int64_t dim = 0; dim < rank; ++dim)
        scales.push_back(double(resultType.getDimSize(dim)) /
                         inputType.getDimSize(dim));
    } else {
      if (static_cast<int64_t>(scales.size()) != rank)
        return emitLoweringError(op) << "needs one scale per dimension";
      for (int64_t dim = 0; dim < rank; ++dim)
        if (scales[dim] <= 0 || static_cast<int64_t>(std::floor(
                                    inputType.getDimSize(dim) * scales[dim])) !=
                                    resultType.getDimSize(dim))
          return emitLoweringError(op)
                 << "scale " << scales[dim] << " of dimension " << dim
                 << " does not give the result type " << resultType;
    }
    SmallVector<double> roi;
    if (transform == "tf_crop_and_resize") {
      std::optional<SmallVector<double>> given =
          isa<NoneType>(op.getRoi().getType())
              ? std::nullopt
              : getConstantFloatValues(op.getRoi());
      if (!given || static_cast<int64_t>(given->size()) != 2 * rank)
        return emitLoweringError(op)
               << "tf_crop_and_resize needs a constant roi of " << 2 * rank
               << " values";
      roi = std::move(*given);
    }

    // One entry per output index and dimension: the source coordinate.
    // Dimensions that map every index to itself need no table.
    SmallVector<SmallVector<double>> coordinates(rank);
    SmallVector<bool> identity(rank, true);
    bool extrapolates = false;
    for (int64_t dim = 0; dim < rank; ++dim) {
      int64_t inSize = inputType.getDimSize(dim);
      int64_t outSize = resultType.getDimSize(dim);
      for (int64_t x = 0; x < outSize; ++x) {
        std::optional<double> coordinate = sourceCoordinate(
            transform, x, inSize, outSize, scales[dim],
            roi.empty() ? 0.0 : roi[dim], roi.empty() ? 1.0 : roi[rank + dim]);
        if (!coordinate)
          return emitLoweringError(op) << "coordinate_transformation_mode '"
                                       << transform << "' is not supported";
        coordinates[dim].push_back(*coordinate);
        identity[dim] = identity[dim] && *coordinate == double(x);
        extrapolates |= *coordinate < 0 || *coordinate > inSize - 1;
      }
    }
    // Only tf_crop_and_resize fills outside the input; the other modes
    // clamp to the edge.
    extrapolates &= transform == "tf_crop_and_resize";

    Value result;
    if (mode == "nearest") {
      result =
          buildNearest(op, rewriter, input, resultType, coordinates, identity);
    } else {
      FailureOr<Value> interpolated = buildInterpolation(
          op, rewriter, input, resultType, coordinates, identity, scales);
      if (failed(interpolated))
        return failure();
      result = *interpolated;
    }
    if (extrapolates)
      result = applyExtrapolation(op, rewriter, result, inputType, coordinates);
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  /// Nearest: round the coordinate per nearest_mode, clamp into the input.
  static Value buildNearest(ONNXResizeOp op, OpBuilder &builder, Value input,
                            RankedTensorType resultType,
                            ArrayRef<SmallVector<double>> coordinates,
                            ArrayRef<bool> identity) {
    StringRef nearestMode = op.getNearestMode();
    auto inputType = cast<RankedTensorType>(input.getType());
    SmallVector<SmallVector<int64_t>> tables(resultType.getRank());
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      if (identity[dim])
        continue;
      int64_t inSize = inputType.getDimSize(dim);
      for (double coordinate : dimCoordinates) {
        double floor = std::floor(coordinate);
        double ratio = coordinate - floor;
        bool up;
        if (ratio == 0 || nearestMode == "floor")
          up = false;
        else if (nearestMode == "ceil")
          up = true;
        else if (nearestMode == "round_prefer_ceil")
          up = ratio >= 0.5;
        else // round_prefer_floor, the default
          up = ratio > 0.5;
        tables[dim].push_back(std::clamp<int64_t>(
            static_cast<int64_t>(floor) + (up ? 1 : 0), 0, inSize - 1));
      }
    }
    return buildTableGather(builder, op.getLoc(), input, resultType, tables);
  }

  /// Linear and cubic: the tensor product of 1-d interpolations (taps and
  /// weights from interpolationTaps) of each resized dimension. Weights are
  /// computed here in double precision and stored in the element type.
  static FailureOr<Value>
  buildInterpolation(ONNXResizeOp op, OpBuilder &builder, Value input,
                     RankedTensorType resultType,
                     ArrayRef<SmallVector<double>> coordinates,
                     ArrayRef<bool> identity, ArrayRef<double> scales) {
    Location loc = op.getLoc();
    MLIRContext *context = builder.getContext();
    auto inputType = cast<RankedTensorType>(input.getType());
    Type elementType = resultType.getElementType();
    unsigned rank = resultType.getRank();
    bool cubic = op.getMode() == "cubic";
    bool antialias = op.getAntialias() != 0;
    double cubicA = op.getCubicCoeffA().convertToDouble();
    bool excludeOutside = op.getExcludeOutside() != 0;
    // Generic inputs: per resized dimension, its taps' index tables then
    // their weight tables.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<int64_t> resized, tapCounts;
    uint64_t combinations = 1;
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      if (identity[dim])
        continue;
      int64_t taps = interpolationTapCount(cubic, antialias, scales[dim]);
      // Every combination of taps is unrolled into the loop body.
      combinations *= taps;
      if (combinations > kMaxInterpolationTerms)
        return emitLoweringError(op)
               << "interpolates more than " << kMaxInterpolationTerms
               << " input values per output (antialiasing at scales " << scales
               << ")";
      SmallVector<SmallVector<int64_t>> indices(taps);
      SmallVector<SmallVector<double>> weights(taps);
      for (double coordinate : dimCoordinates) {
        InterpolationTaps at =
            interpolationTaps(coordinate, inputType.getDimSize(dim), cubic,
                              cubicA, excludeOutside, antialias, scales[dim]);
        for (int64_t tap = 0; tap < taps; ++tap) {
          indices[tap].push_back(at.indices[tap]);
          weights[tap].push_back(at.weights[tap]);
        }
      }
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
