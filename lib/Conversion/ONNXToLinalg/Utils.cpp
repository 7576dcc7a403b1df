//===- Utils.cpp - helpers shared by the onnx-to-linalg patterns ----------===//

#include "Utils.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;

namespace vram {
namespace onnx_to_linalg {

InFlightDiagnostic emitLoweringError(Operation *op) {
  return op->emitOpError() << "cannot be lowered to linalg: ";
}

Value wrapIndex(OpBuilder &b, Location loc, Value index, int64_t extent) {
  index = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value isNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::AddIOp::create(
      b, loc, index, arith::ConstantIndexOp::create(b, loc, extent));
  index = arith::SelectOp::create(b, loc, isNegative, wrapped, index);
  index = arith::MaxSIOp::create(b, loc, index, zero);
  return arith::MinSIOp::create(
      b, loc, index, arith::ConstantIndexOp::create(b, loc, extent - 1));
}

LogicalResult checkConstantIndices(Operation *op, Value original,
                                   Value converted,
                                   ArrayRef<IndexedAxis> axes) {
  if (std::optional<SmallVector<int64_t>> constant =
          getConstantIntValues(original, converted))
    for (auto [i, index] : llvm::enumerate(*constant)) {
      const IndexedAxis &addressed = axes[i % axes.size()];
      if (index < -addressed.extent || index >= addressed.extent)
        return emitLoweringError(op)
               << "index " << index << " is out of range for axis "
               << addressed.axis << " of size " << addressed.extent;
    }
  return success();
}

LogicalResult verifyStaticShapes(Operation *op) {
  auto check = [&](Type type, StringRef kind, unsigned index) -> LogicalResult {
    if (!isa<TensorType>(type))
      return success();
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (ranked && ranked.hasStaticShape())
      return success();
    return emitLoweringError(op)
           << kind << " #" << index << " has type " << type
           << "; only static shapes are supported (bind dynamic dimensions, "
              "e.g. with --batch)";
  };
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (failed(check(operand.getType(), "operand", index)))
      return failure();
  for (auto [index, result] : llvm::enumerate(op->getResults()))
    if (failed(check(result.getType(), "result", index)))
      return failure();
  return success();
}

Value createEmptyTensor(OpBuilder &builder, Location loc,
                        RankedTensorType type) {
  return tensor::EmptyOp::create(builder, loc, type.getShape(),
                                 type.getElementType());
}

Value createFilledTensor(OpBuilder &builder, Location loc,
                         RankedTensorType type, Value value) {
  Value empty = createEmptyTensor(builder, loc, type);
  return linalg::FillOp::create(builder, loc, ValueRange{value},
                                ValueRange{empty})
      .getResult(0);
}

Value createZeroTensor(OpBuilder &builder, Location loc,
                       RankedTensorType type) {
  return createFilledTensor(
      builder, loc, type,
      createScalarConstant(builder, loc, type.getElementType(), 0.0));
}

Value extractOnlyElement(OpBuilder &builder, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<Value> origin(type.getRank(),
                            arith::ConstantIndexOp::create(builder, loc, 0));
  return tensor::ExtractOp::create(builder, loc, tensor, origin);
}

Value createScalarConstant(OpBuilder &builder, Location loc, Type elementType,
                           double value) {
  if (auto floatType = dyn_cast<FloatType>(elementType))
    return arith::ConstantOp::create(builder, loc,
                                     builder.getFloatAttr(floatType, value));
  // std::trunc then the cast: ONNX attributes such as Gemm's alpha apply to
  // integer tensors as the integer part, as ONNX Runtime does.
  auto integer = static_cast<int64_t>(std::trunc(value));
  if (elementType.isIndex())
    return arith::ConstantIndexOp::create(builder, loc, integer);
  return arith::ConstantOp::create(
      builder, loc, builder.getIntegerAttr(elementType, integer));
}

bool isUnsignedOrBool(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isUnsignedInteger() || element.isInteger(1);
}

Value convertScalar(OpBuilder &builder, Location loc, Value value, Type from,
                    Type to, const NarrowFloatRounding &rounding) {
  from = getElementTypeOrSelf(from);
  to = getElementTypeOrSelf(to);
  if (from == to)
    return value;
  Type f32 = builder.getF32Type();
  if (isNarrowFloat(from))
    return convertScalar(builder, loc, decodeNarrowFloat(builder, loc, value),
                         f32, to);
  if (isNarrowFloat(to))
    return encodeNarrowFloat(builder, loc,
                             convertScalar(builder, loc, value, from, f32),
                             cast<FloatType>(to), rounding);
  Type target = to;
  if (auto intType = dyn_cast<IntegerType>(to))
    target = builder.getIntegerType(intType.getWidth());
  Type source = value.getType();

  // Anything to bool: nonzero is true (a truncation would keep only bit 0).
  if (to.isInteger(1)) {
    if (isa<FloatType>(source))
      return arith::CmpFOp::create(
          builder, loc, arith::CmpFPredicate::UNE, value,
          createScalarConstant(builder, loc, source, 0.0));
    return arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ne, value,
        createScalarConstant(builder, loc, source, 0.0));
  }

  auto sourceFloat = dyn_cast<FloatType>(source);
  auto targetFloat = dyn_cast<FloatType>(target);
  if (sourceFloat && targetFloat) {
    if (sourceFloat.getWidth() < targetFloat.getWidth())
      return arith::ExtFOp::create(builder, loc, target, value);
    if (sourceFloat.getWidth() > targetFloat.getWidth())
      return arith::TruncFOp::create(builder, loc, target, value);
    // f16 <-> bf16: neither holds the other; f32 holds both exactly.
    Value wide =
        arith::ExtFOp::create(builder, loc, builder.getF32Type(), value);
    return arith::TruncFOp::create(builder, loc, target, wide);
  }
  if (sourceFloat) {
    // fptosi/fptoui round toward zero, as ONNX Cast specifies.
    unsigned width = target.getIntOrFloatBitWidth();
    if (width >= 8) {
      if (to.isUnsignedInteger())
        return arith::FPToUIOp::create(builder, loc, target, value);
      return arith::FPToSIOp::create(builder, loc, target, value);
    }
    // 4- and 2-bit targets: through i32, 0 outside their range (ONNX's
    // reference; the specification leaves it undefined).
    Type i32 = builder.getI32Type();
    Value whole = arith::FPToSIOp::create(
        builder, loc, i32,
        arith::MaximumFOp::create(
            builder, loc,
            arith::MinimumFOp::create(
                builder, loc, value,
                createScalarConstant(builder, loc, source, 1 << 20)),
            createScalarConstant(builder, loc, source, -(1 << 20))));
    int64_t lowest = to.isUnsignedInteger() ? 0 : -(int64_t(1) << (width - 1));
    int64_t highest = to.isUnsignedInteger() ? (int64_t(1) << width) - 1
                                             : (int64_t(1) << (width - 1)) - 1;
    Value inRange = arith::AndIOp::create(
        builder, loc,
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, whole,
                              createScalarConstant(builder, loc, i32, lowest)),
        arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::sle, whole,
            createScalarConstant(builder, loc, i32, highest)));
    Value narrow = arith::TruncIOp::create(builder, loc, target, whole);
    return arith::SelectOp::create(
        builder, loc, inRange, narrow,
        createScalarConstant(builder, loc, target, 0));
  }
  if (targetFloat) {
    if (isUnsignedOrBool(from))
      return arith::UIToFPOp::create(builder, loc, target, value);
    return arith::SIToFPOp::create(builder, loc, target, value);
  }
  unsigned sourceWidth = source.getIntOrFloatBitWidth();
  unsigned targetWidth = target.getIntOrFloatBitWidth();
  if (sourceWidth < targetWidth) {
    if (isUnsignedOrBool(from))
      return arith::ExtUIOp::create(builder, loc, target, value);
    return arith::ExtSIOp::create(builder, loc, target, value);
  }
  if (sourceWidth > targetWidth)
    return arith::TruncIOp::create(builder, loc, target, value);
  // Same width, other signedness: the bits are the value.
  return value;
}

AffineMap getBroadcastIndexingMap(MLIRContext *context,
                                  ArrayRef<int64_t> operandShape,
                                  ArrayRef<int64_t> resultShape) {
  unsigned offset = resultShape.size() - operandShape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [index, size] : llvm::enumerate(operandShape)) {
    unsigned resultDim = offset + index;
    if (size == 1 && resultShape[resultDim] != 1)
      exprs.push_back(getAffineConstantExpr(0, context));
    else
      exprs.push_back(getAffineDimExpr(resultDim, context));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, context);
}

SmallVector<utils::IteratorType> getParallelIterators(unsigned count) {
  return SmallVector<utils::IteratorType>(count, utils::IteratorType::parallel);
}

Value buildParallelGeneric(OpBuilder &builder, Location loc,
                           RankedTensorType resultType, ValueRange inputs,
                           ArrayRef<AffineMap> inputMaps,
                           ScalarBodyBuilder bodyBuilder) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(builder.getMultiDimIdentityMap(resultType.getRank()));
  Value init = createEmptyTensor(builder, loc, resultType);
  auto generic = linalg::GenericOp::create(
      builder, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
      getParallelIterators(resultType.getRank()),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = bodyBuilder(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value buildElementwiseGeneric(OpBuilder &builder, Location loc,
                              RankedTensorType resultType, ValueRange inputs,
                              ScalarBodyBuilder bodyBuilder) {
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(getBroadcastIndexingMap(
        builder.getContext(), cast<ShapedType>(input.getType()).getShape(),
        resultType.getShape()));
  return buildParallelGeneric(builder, loc, resultType, inputs, maps,
                              bodyBuilder);
}

/// The elements attribute behind `value`, looking through the unrealized
/// casts that the unsigned-to-signless type conversion inserts.
static DenseElementsAttr getConstantElements(Value value) {
  while (auto cast = value.getDefiningOp<UnrealizedConversionCastOp>()) {
    if (cast.getInputs().size() != 1)
      break;
    value = cast.getInputs().front();
  }
  Attribute attr;
  if (!value || !matchPattern(value, m_Constant(&attr)))
    return {};
  return dyn_cast<DenseElementsAttr>(attr);
}

std::optional<SmallVector<int64_t>> getConstantIntValues(Value value) {
  DenseElementsAttr elements = getConstantElements(value);
  if (!elements || !isa<IntegerType>(elements.getElementType()))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &element : elements.getValues<APInt>())
    values.push_back(element.getSExtValue());
  return values;
}

std::optional<SmallVector<double>> getConstantFloatValues(Value value) {
  auto elements =
      dyn_cast_if_present<DenseFPElementsAttr>(getConstantElements(value));
  if (!elements)
    return std::nullopt;
  return vram::getFloatValues(elements);
}

std::optional<SmallVector<int64_t>> getConstantIntValues(Value original,
                                                         Value converted) {
  if (auto values = getConstantIntValues(original))
    return values;
  return getConstantIntValues(converted);
}

FailureOr<int64_t> normalizeAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    emitLoweringError(op) << "axis " << axis << " is out of range for rank "
                          << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<SmallVector<int64_t>>
normalizeAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    FailureOr<int64_t> normalized = normalizeAxis(op, axis, rank);
    if (failed(normalized))
      return failure();
    if (!seen.insert(*normalized).second) {
      emitLoweringError(op) << "axis " << axis << " is repeated";
      return failure();
    }
    result.push_back(*normalized);
  }
  return result;
}

Value reshapeTensor(OpBuilder &builder, Location loc, Value value,
                    RankedTensorType resultType) {
  auto sourceType = cast<RankedTensorType>(value.getType());
  if (sourceType == resultType)
    return value;
  int64_t sourceRank = sourceType.getRank();
  int64_t resultRank = resultType.getRank();
  if (sourceRank > resultRank) {
    if (auto reassociation =
            getReassociationIndicesForReshape(sourceType, resultType))
      return tensor::CollapseShapeOp::create(builder, loc, resultType, value,
                                             *reassociation);
  } else if (sourceRank < resultRank) {
    if (auto reassociation =
            getReassociationIndicesForReshape(sourceType, resultType))
      return tensor::ExpandShapeOp::create(builder, loc, resultType, value,
                                           *reassociation);
  }
  // Shapes that regroup elements across dimensions (2x3 -> 3x2): flatten,
  // then split. Both steps stay views, unlike a copy, so the memory analysis
  // still sees one buffer. (Rank-0 shapes always have a reassociation above.)
  auto allDims = [](int64_t rank) {
    SmallVector<ReassociationIndices> reassociation(1);
    for (int64_t dim = 0; dim < rank; ++dim)
      reassociation.front().push_back(dim);
    return reassociation;
  };
  auto flatType = RankedTensorType::get({sourceType.getNumElements()},
                                        sourceType.getElementType());
  Value flat = value;
  if (sourceRank != 1)
    flat = tensor::CollapseShapeOp::create(builder, loc, flatType, value,
                                           allDims(sourceRank));
  if (resultRank == 1)
    return flat;
  return tensor::ExpandShapeOp::create(builder, loc, resultType, flat,
                                       allDims(resultRank));
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &builder,
                                     ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t value) -> OpFoldResult {
    return builder.getIndexAttr(value);
  });
}

} // namespace onnx_to_linalg
} // namespace vram
