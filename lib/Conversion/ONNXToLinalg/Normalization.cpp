//===- Normalization.cpp - normalization, Softmax and Dropout to linalg ---===//
//
// BatchNormalization and LayerNormalization become linalg.generic
// reductions (mean, then population variance around it) and one elementwise
// linalg.generic that normalizes, scales and shifts; Softmax becomes
// linalg.softmax, LogSoftmax two row reductions and a subtraction; Dropout
// outside training is the identity, in training a mask of counter-based
// random draws, which RandomUniformLike also uses.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

/// Converts a float scalar to `type` (extf/truncf); identity if it has it.
static Value castFloat(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  if (value.getType().getIntOrFloatBitWidth() < type.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, type, value);
  return arith::TruncFOp::create(b, loc, type, value);
}

/// f16 and bf16 statistics are computed in f32, as ONNX requires for
/// BatchNormalization's ReduceMean/ReduceVar.
static FloatType accumulatorType(FloatType type) {
  if (type.getWidth() < 32)
    return Float32Type::get(type.getContext());
  return type;
}

/// Statistics of X over every dim not in `keptDims`, one per kept position:
/// the mean and the population variance sum((x - mean)^2) / count, in
/// `accType`.
static std::pair<Value, Value> createMeanAndVariance(OpBuilder &b, Location loc,
                                                     Value x,
                                                     ArrayRef<int64_t> keptDims,
                                                     FloatType accType) {
  auto xType = cast<RankedTensorType>(x.getType());
  MLIRContext *context = b.getContext();
  unsigned rank = xType.getRank();
  SmallVector<int64_t> statShape;
  SmallVector<AffineExpr> statExprs;
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  int64_t count = xType.getNumElements();
  for (int64_t d : keptDims) {
    statShape.push_back(xType.getDimSize(d));
    statExprs.push_back(getAffineDimExpr(d, context));
    iterators[d] = utils::IteratorType::parallel;
    count /= xType.getDimSize(d);
  }
  auto statType = RankedTensorType::get(statShape, accType);
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap statMap = AffineMap::get(rank, 0, statExprs, context);
  AffineMap statIdentity = b.getMultiDimIdentityMap(statShape.size());
  Value countValue =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(accType, count));
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));

  auto reduce = [&](ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                    ScalarBodyBuilder term) {
    Value init = createFilledTensor(b, loc, statType, zero);
    SmallVector<AffineMap> maps(inputMaps);
    maps.push_back(statMap);
    return linalg::GenericOp::create(
               b, loc, statType, inputs, init, maps, iterators,
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 Value sum = arith::AddFOp::create(
                     nb, nloc, args.back(), term(nb, nloc, args.drop_back()));
                 linalg::YieldOp::create(nb, nloc, sum);
               })
        .getResult(0);
  };
  auto divideByCount = [&](Value sums) {
    return buildParallelGeneric(
        b, loc, statType, sums, statIdentity,
        [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
          return arith::DivFOp::create(nb, nloc, args[0], countValue);
        });
  };

  Value mean = divideByCount(
      reduce(x, identity, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        return castFloat(nb, nloc, args[0], accType);
      }));
  Value variance = divideByCount(reduce(
      {x, mean}, {identity, statMap},
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        Value diff = arith::SubFOp::create(
            nb, nloc, castFloat(nb, nloc, args[0], accType), args[1]);
        return arith::MulFOp::create(nb, nloc, diff, diff);
      }));
  return {mean, variance};
}

/// The map reading `value` (Scale or B) broadcast unidirectionally to
/// `shape`; a lowering error if it does not broadcast.
static FailureOr<AffineMap> broadcastMap(Operation *op, StringRef name,
                                         Value value, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t offset = shape.size() - type.getRank();
  if (offset < 0)
    return emitLoweringError(op) << name << " has a higher rank than X";
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.getDimSize(i) != 1 && type.getDimSize(i) != shape[offset + i])
      return emitLoweringError(op)
             << name << " dimension " << i << " (" << type.getDimSize(i)
             << ") does not broadcast to " << shape[offset + i];
  return getBroadcastIndexingMap(op->getContext(), type.getShape(), shape);
}

/// Checks that every tensor operand and result of `op` has a float element
/// type.
static LogicalResult checkFloatTensors(Operation *op) {
  for (Type type : llvm::concat<const Type>(op->getOperandTypes(),
                                            op->getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && !isa<FloatType>(tensor.getElementType()))
      return emitLoweringError(op) << "element type "
                                   << tensor.getElementType()
                                   << " is not a float type";
  }
  return success();
}

namespace {

/// Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (dim 1),
/// with the given statistics in inference mode and the batch's (over N and
/// the spatial dims) in training mode, which also yields
/// running = input * momentum + batch * (1 - momentum).
struct BatchNormalizationLowering
    : ONNXToLinalgPattern<ONNXBatchNormalizationOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXBatchNormalizationOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    if (failed(checkFloatTensors(op)))
      return failure();
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    auto xElement = cast<FloatType>(xType.getElementType());
    FloatType accType = accumulatorType(xElement);
    unsigned rank = xType.getRank();
    MLIRContext *context = rewriter.getContext();
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap channelMap =
        AffineMap::get(rank, 0, getAffineDimExpr(1, context));
    bool training = op.getTrainingMode() != 0;

    Value mean = adaptor.getInputMean(), variance = adaptor.getInputVar();
    if (training)
      std::tie(mean, variance) =
          createMeanAndVariance(rewriter, loc, adaptor.getX(), {1}, accType);
    Value epsilon = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getFloatAttr(accType,
                              op.getEpsilonAttr().getValueAsDouble()));
    Value y = buildParallelGeneric(
        rewriter, loc, xType,
        {adaptor.getX(), adaptor.getScale(), adaptor.getB(), mean, variance},
        {identity, channelMap, channelMap, channelMap, channelMap},
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          SmallVector<Value> acc = llvm::to_vector(llvm::map_range(
              args, [&](Value v) { return castFloat(b, nloc, v, accType); }));
          Value centered = arith::SubFOp::create(b, nloc, acc[0], acc[3]);
          Value stddev = math::SqrtOp::create(
              b, nloc, arith::AddFOp::create(b, nloc, acc[4], epsilon));
          Value normalized = arith::DivFOp::create(b, nloc, centered, stddev);
          Value scaled = arith::MulFOp::create(b, nloc, normalized, acc[1]);
          Value shifted = arith::AddFOp::create(b, nloc, scaled, acc[2]);
          return castFloat(b, nloc, shifted, xElement);
        });

    SmallVector<Value> results = {y};
    double momentumValue = op.getMomentumAttr().getValueAsDouble();
    Value momentum = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(accType, momentumValue));
    Value rest = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(accType, 1.0 - momentumValue));
    for (auto [running, input, batch] :
         {std::tuple<Value, Value, Value>(op.getRunningMean(),
                                          adaptor.getInputMean(), mean),
          std::tuple<Value, Value, Value>(op.getRunningVar(),
                                          adaptor.getInputVar(), variance)}) {
      if (isa<NoneType>(running.getType())) {
        results.push_back(ONNXNoValueOp::create(rewriter, loc));
        continue;
      }
      RankedTensorType runningType = convertTensorType(running.getType());
      AffineMap vectorMap = rewriter.getMultiDimIdentityMap(1);
      results.push_back(buildParallelGeneric(
          rewriter, loc, runningType, {input, batch}, {vectorMap, vectorMap},
          [&](OpBuilder &b, Location nloc, ValueRange args) {
            Value kept = arith::MulFOp::create(
                b, nloc, castFloat(b, nloc, args[0], accType), momentum);
            Value added = arith::MulFOp::create(
                b, nloc, castFloat(b, nloc, args[1], accType), rest);
            return castFloat(b, nloc,
                             arith::AddFOp::create(b, nloc, kept, added),
                             runningType.getElementType());
          }));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Normalizes X over dims [axis, rank) in the stash_type precision, casts
/// back to X's type, then scales and shifts; Mean and InvStdDev keep the
/// reduced dims as 1s.
struct LayerNormalizationLowering
    : ONNXToLinalgPattern<ONNXLayerNormalizationOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXLayerNormalizationOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    if (failed(checkFloatTensors(op)))
      return failure();
    MLIRContext *context = rewriter.getContext();
    auto stashType = dyn_cast_if_present<FloatType>(
        getElementTypeForONNXDataType(context, op.getStashType()));
    if (!stashType)
      return emitLoweringError(op) << "stash_type " << op.getStashType()
                                   << " is not a float type";
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(adaptor.getX().getType());
    auto xElement = cast<FloatType>(xType.getElementType());
    int64_t rank = xType.getRank();
    int64_t axis = op.getAxisAttr().getInt();
    if (axis < 0)
      axis += rank;
    SmallVector<int64_t> keptDims = llvm::to_vector(llvm::seq<int64_t>(0, axis));

    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap statMap = AffineMap::get(
        rank, 0,
        llvm::to_vector(llvm::map_range(
            keptDims, [&](int64_t d) { return getAffineDimExpr(d, context); })),
        context);
    SmallVector<Value> inputs = {adaptor.getX()};
    SmallVector<AffineMap> maps = {identity};
    for (auto [name, value] : {std::pair<StringRef, Value>{"Scale",
                                                           adaptor.getScale()},
                               {"B", adaptor.getB()}}) {
      if (isa<NoneType>(value.getType()))
        continue;
      FailureOr<AffineMap> map =
          broadcastMap(op, name, value, xType.getShape());
      if (failed(map))
        return failure();
      inputs.push_back(value);
      maps.push_back(*map);
    }
    bool hasBias = inputs.size() == 3;

    auto [mean, variance] =
        createMeanAndVariance(rewriter, loc, adaptor.getX(), keptDims, stashType);
    auto statType = cast<RankedTensorType>(mean.getType());
    Value epsilon = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getFloatAttr(stashType,
                              op.getEpsilonAttr().getValueAsDouble()));
    Value one = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(stashType, 1.0));
    Value invStdDev = buildParallelGeneric(
        rewriter, loc, statType, variance,
        rewriter.getMultiDimIdentityMap(statType.getRank()),
        [&](OpBuilder &b, Location nloc, ValueRange args) -> Value {
          Value stddev = math::SqrtOp::create(
              b, nloc, arith::AddFOp::create(b, nloc, args[0], epsilon));
          return arith::DivFOp::create(b, nloc, one, stddev);
        });

    inputs.append({mean, invStdDev});
    maps.append({statMap, statMap});
    Value y = buildParallelGeneric(
        rewriter, loc, xType, inputs, maps,
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value centered = arith::SubFOp::create(
              b, nloc, castFloat(b, nloc, args[0], stashType),
              args[args.size() - 2]);
          Value normalized = castFloat(
              b, nloc, arith::MulFOp::create(b, nloc, centered, args.back()),
              xElement);
          Value result = arith::MulFOp::create(
              b, nloc, normalized, castFloat(b, nloc, args[1], xElement));
          if (hasBias)
            result = arith::AddFOp::create(
                b, nloc, result, castFloat(b, nloc, args[2], xElement));
          return result;
        });

    SmallVector<Value> results = {y};
    for (auto [output, stat] :
         {std::pair<Value, Value>(op.getMean(), mean),
          std::pair<Value, Value>(op.getInvStdDev(), invStdDev)}) {
      if (isa<NoneType>(output.getType())) {
        results.push_back(ONNXNoValueOp::create(rewriter, loc));
        continue;
      }
      RankedTensorType outputType = convertTensorType(output.getType());
      if (outputType.getElementType() != stashType)
        return emitLoweringError(op)
               << "Mean and InvStdDev must have the stash_type";
      // Kept dims map one to one; the reduced ones become 1s, absorbed by
      // the last kept dim (or, with axis = 0, by a rank-0 statistic).
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d < axis; ++d)
        groups.push_back({d});
      if (!groups.empty())
        for (int64_t d = axis; d < rank; ++d)
          groups.back().push_back(d);
      results.push_back(tensor::ExpandShapeOp::create(rewriter, loc, outputType,
                                                      stat, groups));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct SoftmaxLowering : ONNXToLinalgPattern<ONNXSoftmaxOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXSoftmaxOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    if (failed(checkFloatTensors(op)))
      return failure();
    auto type = cast<RankedTensorType>(adaptor.getInput().getType());
    int64_t axis = op.getAxisAttr().getInt();
    if (axis < 0)
      axis += type.getRank();
    Value empty = createEmptyTensor(rewriter, op.getLoc(), type);
    rewriter.replaceOp(op, linalg::SoftmaxOp::create(
                               rewriter, op.getLoc(), type, adaptor.getInput(),
                               empty, static_cast<uint64_t>(axis))
                               ->getResult(0));
    return success();
  }
};

/// LogSoftmax(x) = x - (max + log(sum(exp(x - max)))) along `axis`: the row
/// statistics (in f32 for narrower floats) are one max and one sum of
/// exponentials that are at most 1, so nothing overflows, and no softmax is
/// formed whose log would be -inf where it underflows.
struct LogSoftmaxLowering : ONNXToLinalgPattern<ONNXLogSoftmaxOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXLogSoftmaxOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    if (failed(checkFloatTensors(op)))
      return failure();
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxisAttr().getInt();
    if (axis < 0)
      axis += rank;
    FloatType accType = accumulatorType(cast<FloatType>(type.getElementType()));
    MLIRContext *context = rewriter.getContext();

    SmallVector<int64_t> rowShape;
    SmallVector<AffineExpr> rowExprs;
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators[axis] = utils::IteratorType::reduction;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis) {
        rowShape.push_back(type.getDimSize(d));
        rowExprs.push_back(getAffineDimExpr(d, context));
      }
    auto rowType = RankedTensorType::get(rowShape, accType);
    AffineMap identity = rewriter.getMultiDimIdentityMap(rank);
    AffineMap rowMap = AffineMap::get(rank, 0, rowExprs, context);

    // One statistic per row: `combine(accumulator, x, rowInputs...)`.
    auto reduceRows =
        [&](Attribute initial, ValueRange rowInputs,
            function_ref<Value(OpBuilder &, Location, Value, Value, ValueRange)>
                combine) {
          Value init =
              createFilledTensor(rewriter, loc, rowType,
                                 arith::ConstantOp::create(
                                     rewriter, loc, cast<TypedAttr>(initial)));
          SmallVector<Value> inputs{x};
          llvm::append_range(inputs, rowInputs);
          SmallVector<AffineMap> maps{identity};
          maps.append(rowInputs.size(), rowMap);
          maps.push_back(rowMap);
          return linalg::GenericOp::create(
                     rewriter, loc, rowType, inputs, init, maps, iterators,
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value element = castFloat(b, l, args[0], accType);
                       linalg::YieldOp::create(
                           b, l,
                           combine(b, l, args.back(), element,
                                   args.slice(1, rowInputs.size())));
                     })
              .getResult(0);
        };
    APFloat lowest =
        APFloat::getInf(accType.getFloatSemantics(), /*Negative=*/true);
    Value rowMax = reduceRows(
        rewriter.getFloatAttr(accType, lowest), {},
        [](OpBuilder &b, Location l, Value acc, Value element, ValueRange) {
          return arith::MaximumFOp::create(b, l, acc, element).getResult();
        });
    Value rowSum = reduceRows(
        rewriter.getZeroAttr(accType), rowMax,
        [](OpBuilder &b, Location l, Value acc, Value element,
           ValueRange row) -> Value {
          Value shifted = arith::SubFOp::create(b, l, element, row[0]);
          return arith::AddFOp::create(b, l, acc,
                                       math::ExpOp::create(b, l, shifted));
        });
    AffineMap rowIdentity = rewriter.getMultiDimIdentityMap(rowShape.size());
    Value logSum = buildParallelGeneric(
        rewriter, loc, rowType, {rowMax, rowSum}, {rowIdentity, rowIdentity},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(b, l, args[0],
                                       math::LogOp::create(b, l, args[1]));
        });
    Value output = buildParallelGeneric(
        rewriter, loc, type, {x, logSum}, {identity, rowMap},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(
              b, l, castFloat(b, l, args[0], accType), args[1]);
          return castFloat(b, l, shifted, type.getElementType());
        });
    rewriter.replaceOp(op, output);
    return success();
  }
};

/// A tensor of `type` whose element i (row-major) is `finish(u_i)`, u_i an
/// f64 uniform in [0, 1) from a counter-based generator, so the tensor is a
/// pure function of (seed, shape) and a step recomputed or run twice draws
/// the same values: splitmix64 of seed * 2^32 + i + 1 draws, u = (z >> 11) *
/// 2^-53 (docs/execution.md, "Generated data").
Value buildUniformDraws(
    OpBuilder &builder, Location loc, RankedTensorType type, uint64_t seed,
    function_ref<Value(OpBuilder &, Location, Value)> finish) {
  return buildParallelGeneric(
      builder, loc, type, {}, {},
      [&](OpBuilder &b, Location l, ValueRange) -> Value {
        Type i64 = b.getI64Type();
        auto constant = [&](uint64_t value) -> Value {
          return arith::ConstantOp::create(
              b, l, b.getIntegerAttr(i64, static_cast<int64_t>(value)));
        };
        Value flat = constant(0);
        for (int64_t d = 0; d < type.getRank(); ++d) {
          Value index = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, d));
          flat = arith::AddIOp::create(
              b, l,
              arith::MulIOp::create(b, l, flat, constant(type.getDimSize(d))),
              index);
        }
        Value counter = arith::AddIOp::create(b, l, flat, constant(1));
        Value z = arith::AddIOp::create(
            b, l, constant(seed << 32),
            arith::MulIOp::create(b, l, counter,
                                  constant(0x9E3779B97F4A7C15ULL)));
        auto mix = [&](Value v, uint64_t shift, uint64_t multiplier) {
          Value x = arith::XOrIOp::create(
              b, l, v, arith::ShRUIOp::create(b, l, v, constant(shift)));
          return multiplier ? Value(arith::MulIOp::create(b, l, x,
                                                          constant(multiplier)))
                            : x;
        };
        z = mix(z, 30, 0xBF58476D1CE4E5B9ULL);
        z = mix(z, 27, 0x94D049BB133111EBULL);
        z = mix(z, 31, 0);
        Value unit = arith::MulFOp::create(
            b, l,
            arith::UIToFPOp::create(
                b, l, b.getF64Type(),
                arith::ShRUIOp::create(b, l, z, constant(11))),
            arith::ConstantOp::create(b, l, b.getF64FloatAttr(0x1p-53)));
        return finish(b, l, unit);
      });
}

/// Dropout is the identity (mask all true) outside training or with ratio
/// 0; in training mode output = data * mask / (1 - ratio), element i kept
/// when u_i >= ratio (buildUniformDraws with the seed attribute, 0 when
/// absent: deterministic, where ONNX leaves an absent seed to the runtime).
struct DropoutLowering : ONNXToLinalgPattern<ONNXDropoutOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXDropoutOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double ratio = 0.0;
    if (!isa<NoneType>(op.getTrainingMode().getType())) {
      std::optional<SmallVector<int64_t>> training =
          getConstantIntValues(op.getTrainingMode(), adaptor.getTrainingMode());
      if (!training || training->size() != 1)
        return emitLoweringError(op) << "training_mode must be a constant";
      if (training->front() != 0) {
        // ratio defaults to 0.5.
        ratio = 0.5;
        if (!isa<NoneType>(op.getRatio().getType())) {
          std::optional<SmallVector<double>> values =
              getConstantFloatValues(op.getRatio());
          if (!values || values->size() != 1)
            return emitLoweringError(op) << "ratio must be a constant";
          ratio = values->front();
        }
        if (ratio < 0.0 || ratio >= 1.0)
          return emitLoweringError(op)
                 << "ratio must be in [0, 1), got " << ratio;
      }
    }
    bool wantsMask = !isa<NoneType>(op.getMask().getType());
    if (ratio == 0.0) {
      SmallVector<Value> results = {adaptor.getData()};
      if (wantsMask)
        results.push_back(createFilledTensor(
            rewriter, loc, convertTensorType(op.getMask().getType()),
            arith::ConstantOp::create(rewriter, loc,
                                      rewriter.getBoolAttr(true))));
      else
        results.push_back(ONNXNoValueOp::create(rewriter, loc));
      rewriter.replaceOp(op, results);
      return success();
    }

    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto maskType = RankedTensorType::get(dataType.getShape(),
                                          rewriter.getI1Type());
    Value mask = buildUniformDraws(
        rewriter, loc, maskType, op.getSeed().value_or(0),
        [&](OpBuilder &b, Location l, Value unit) -> Value {
          return arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGE, unit,
              arith::ConstantOp::create(b, l, b.getF64FloatAttr(ratio)));
        });
    Type element = dataType.getElementType();
    Value scale = createScalarConstant(rewriter, loc, element,
                                       1.0 / (1.0 - ratio));
    Value zero = createScalarConstant(rewriter, loc, element, 0.0);
    Value output = buildElementwiseGeneric(
        rewriter, loc, dataType, {adaptor.getData(), mask},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value scaled = arith::MulFOp::create(b, l, args[0], scale);
          return arith::SelectOp::create(b, l, args[1], scaled, zero);
        });
    Value maskResult =
        wantsMask ? mask : Value(ONNXNoValueOp::create(rewriter, loc));
    rewriter.replaceOp(op, {output, maskResult});
    return success();
  }
};

/// low + (high - low) u_i (buildUniformDraws), rounded to the element type;
/// the seed is the bits of the `seed` float (0 when absent).
struct RandomUniformLikeLowering
    : ONNXToLinalgPattern<ONNXRandomUniformLikeOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXRandomUniformLikeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(convertTensorType(op.getType()));
    double low = op.getLow().convertToDouble();
    double range = op.getHigh().convertToDouble() - low;
    uint64_t seed =
        op.getSeed() ? llvm::bit_cast<uint32_t>(op.getSeed()->convertToFloat())
                     : 0;
    rewriter.replaceOp(
        op,
        buildUniformDraws(
            rewriter, op.getLoc(), type, seed,
            [&](OpBuilder &b, Location l, Value unit) -> Value {
              Value value = arith::AddFOp::create(
                  b, l, arith::ConstantOp::create(b, l, b.getF64FloatAttr(low)),
                  arith::MulFOp::create(b, l, unit,
                                        arith::ConstantOp::create(
                                            b, l, b.getF64FloatAttr(range))));
              return castFloat(b, l, value, type.getElementType());
            }));
    return success();
  }
};

} // namespace

void vram::populateNormalizationToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<BatchNormalizationLowering, LayerNormalizationLowering,
               SoftmaxLowering, LogSoftmaxLowering, DropoutLowering,
               RandomUniformLikeLowering>(typeConverter, patterns.getContext());
}
