//===- ShapeInference.cpp - result types of the ONNX ops -------------------===//
//
// ONNX's shape inference rules, per op, on MLIR types. Constant operands
// (Reshape's shape, Unsqueeze's axes, Pad's pads, ...) are read through
// m_Constant, so shape computations the folders reduced to constants give
// static shapes; a value known only at run time gives dynamic dimensions.
//
//===----------------------------------------------------------------------===//

#include "ShapeInference.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace vram;
using namespace vram::detail;

namespace vram {

LogicalResult inferSameTypeAsOperand(Value operand,
                                     SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(operand.getType());
  return success();
}

LogicalResult inferBroadcastResult(Operation *op, ValueRange operands,
                                   Type elementType,
                                   SmallVectorImpl<Type> &resultTypes) {
  if (!elementType)
    elementType = elementTypeOf(operands.front());
  SmallVector<int64_t> shape;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    auto type = getRankedType(operand);
    if (!type)
      return unranked(elementType, resultTypes);
    SmallVector<int64_t> next;
    if (i == 0) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      continue;
    }
    if (!OpTrait::util::getBroadcastedShape(shape, type.getShape(), next))
      return op->emitOpError()
             << "operand shapes cannot be broadcast together: operand " << i
             << " is " << type;
    shape = std::move(next);
  }
  resultTypes.push_back(tensorOf(shape, elementType));
  return success();
}

DenseElementsAttr getFloatElements(RankedTensorType type,
                                   ArrayRef<double> values) {
  const llvm::fltSemantics &semantics =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> elements;
  for (double value : values) {
    APFloat element(value);
    bool losesInfo;
    element.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
    elements.push_back(element);
  }
  return DenseElementsAttr::get(type, elements);
}

SmallVector<double> getFloatValues(DenseFPElementsAttr attr) {
  SmallVector<double> values;
  for (APFloat element : attr.getValues<APFloat>()) {
    bool losesInfo;
    element.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
    values.push_back(element.convertToDouble());
  }
  return values;
}

std::optional<SmallVector<int64_t>> getConstantInts(Value value) {
  DenseIntElementsAttr attr;
  if (!value || isNone(value) || !matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &v : attr.getValues<APInt>())
    values.push_back(attr.getElementType().isUnsignedInteger()
                         ? int64_t(v.getZExtValue())
                         : v.getSExtValue());
  return values;
}

std::optional<int64_t> getONNXDataType(Type elementType) {
  if (elementType.isF32())
    return 1;
  if (elementType.isF64())
    return 11;
  if (elementType.isF16())
    return 10;
  if (elementType.isBF16())
    return 16;
  if (isa<Float8E4M3FNType>(elementType))
    return 17;
  if (isa<Float8E4M3FNUZType>(elementType))
    return 18;
  if (isa<Float8E5M2Type>(elementType))
    return 19;
  if (isa<Float8E5M2FNUZType>(elementType))
    return 20;
  if (isa<Float4E2M1FNType>(elementType))
    return 23;
  if (isa<Float8E8M0FNUType>(elementType))
    return 24;
  if (elementType.isInteger(1))
    return 9;
  if (isa<ONNXStringType>(elementType))
    return 8;
  auto integer = dyn_cast<IntegerType>(elementType);
  if (!integer)
    return std::nullopt;
  bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 2:
    return isUnsigned ? 25 : 26;
  case 4:
    return isUnsigned ? 21 : 22;
  case 8:
    return isUnsigned ? 2 : 3;
  case 16:
    return isUnsigned ? 4 : 5;
  case 32:
    return isUnsigned ? 12 : 6;
  case 64:
    return isUnsigned ? 13 : 7;
  default:
    return std::nullopt;
  }
}

Type getElementTypeForONNXDataType(MLIRContext *context, int64_t dataType) {
  auto integer = [&](unsigned width, bool isUnsigned) -> Type {
    return IntegerType::get(context, width,
                            isUnsigned ? IntegerType::Unsigned
                                       : IntegerType::Signless);
  };
  switch (dataType) {
  case 1:
    return Float32Type::get(context);
  case 2:
    return integer(8, true);
  case 3:
    return integer(8, false);
  case 4:
    return integer(16, true);
  case 5:
    return integer(16, false);
  case 6:
    return integer(32, false);
  case 7:
    return integer(64, false);
  case 8:
    return ONNXStringType::get(context);
  case 9:
    return IntegerType::get(context, 1);
  case 10:
    return Float16Type::get(context);
  case 11:
    return Float64Type::get(context);
  case 12:
    return integer(32, true);
  case 13:
    return integer(64, true);
  case 16:
    return BFloat16Type::get(context);
  case 17:
    return Float8E4M3FNType::get(context);
  case 18:
    return Float8E4M3FNUZType::get(context);
  case 19:
    return Float8E5M2Type::get(context);
  case 20:
    return Float8E5M2FNUZType::get(context);
  case 21:
    return integer(4, true);
  case 22:
    return integer(4, false);
  case 23:
    return Float4E2M1FNType::get(context);
  case 24:
    return Float8E8M0FNUType::get(context);
  case 25:
    return integer(2, true);
  case 26:
    return integer(2, false);
  default:
    return {};
  }
}

} // namespace vram

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ONNXClipOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getInput(), types);
}

LogicalResult ONNXTriluOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getInput(), types);
}

LogicalResult ONNXPowOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(*this, getOperands(), elementTypeOf(getX()),
                              types);
}

LogicalResult ONNXWhereOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferBroadcastResult(*this, getOperands(), elementTypeOf(getX()),
                              types);
}

LogicalResult ONNXCastOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  Type elementType = getElementTypeForONNXDataType(getContext(), getTo());
  if (!elementType)
    return emitOpError() << "cannot cast to ONNX data type " << getTo();
  auto type = cast<TensorType>(getInput().getType());
  types.push_back(type.clone(elementType));
  return success();
}

LogicalResult
ONNXRandomUniformLikeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = cast<TensorType>(getInput().getType());
  Type elementType = type.getElementType();
  if (std::optional<uint64_t> dtype = getDtype())
    elementType = getElementTypeForONNXDataType(getContext(), *dtype);
  if (!isa_and_present<FloatType>(elementType))
    return emitOpError() << "draws floats; dtype " << getDtype().value_or(0)
                         << " is not an ONNX float type";
  types.push_back(type.clone(elementType));
  return success();
}

LogicalResult ONNXDropoutOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  types.push_back(getData().getType());
  auto type = cast<TensorType>(getData().getType());
  pushResult(types, getMask(), type.clone(IntegerType::get(getContext(), 1)));
  return success();
}

LogicalResult ONNXSoftmaxOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getInput(), types);
}

LogicalResult ONNXLogSoftmaxOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getInput(), types);
}

LogicalResult
ONNXScatterElementsOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getData(), types);
}

LogicalResult ONNXScatterNDOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferSameTypeAsOperand(getData(), types);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalisation
//===----------------------------------------------------------------------===//

/// [N, channels, spatial...] of a window op over `x`.
static LogicalResult inferWindowResult(Operation *op, RankedTensorType x,
                                       int64_t channels, WindowGeometry window,
                                       SmallVectorImpl<int64_t> &shape) {
  if (x.getRank() < 3)
    return op->emitOpError("input X must have rank >= 3 (N x C x D1...)");
  int64_t spatialRank = x.getRank() - 2;
  if (static_cast<int64_t>(window.kernel.size()) != spatialRank)
    return op->emitOpError() << "kernel_shape has " << window.kernel.size()
                             << " values, expected " << spatialRank;
  if (failed(verifyWindowAttrs(op, spatialRank, window)))
    return failure();
  shape.assign({x.getDimSize(0), channels});
  for (int64_t i = 0; i < spatialRank; ++i) {
    int64_t in = x.getDimSize(i + 2);
    if (ShapedType::isDynamic(in)) {
      shape.push_back(kDynamic);
      continue;
    }
    int64_t out = windowOutputSize(window, i, in);
    if (out < 1)
      return op->emitOpError()
             << "window of extent " << window.kernel[i]
             << " does not fit spatial dimension " << i << " of size " << in;
    shape.push_back(out);
  }
  return success();
}

LogicalResult ONNXConvOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto x = getRankedType(getX()), w = getRankedType(getW());
  if (!x || !w)
    return unranked(elementTypeOf(getX()), types);
  if (w.getRank() != x.getRank())
    return emitOpError() << "weight W has rank " << w.getRank()
                         << ", expected " << x.getRank();
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad()};
  if (window.kernel.empty())
    window.kernel.assign(w.getShape().begin() + 2, w.getShape().end());
  SmallVector<int64_t> shape;
  if (failed(inferWindowResult(*this, x, w.getDimSize(0), window, shape)))
    return failure();
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult
ONNXConvTransposeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto x = getRankedType(getX()), w = getRankedType(getW());
  if (!x || !w)
    return unranked(elementTypeOf(getX()), types);
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return emitOpError("X and W must have the same rank >= 3");
  int64_t spatialRank = x.getRank() - 2;
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad()};
  if (window.kernel.empty())
    window.kernel.assign(w.getShape().begin() + 2, w.getShape().end());
  if (failed(verifyWindowAttrs(*this, spatialRank, window)))
    return failure();
  int64_t channels = ShapedType::isDynamic(w.getDimSize(1))
                         ? kDynamic
                         : w.getDimSize(1) * getGroup();
  SmallVector<int64_t> shape{x.getDimSize(0), channels};
  SmallVector<int64_t> outputShape = toInts(getOutputShape());
  SmallVector<int64_t> outputPadding = toInts(getOutputPadding());
  outputPadding.resize(spatialRank, 0);
  for (int64_t i = 0; i < spatialRank; ++i) {
    if (!outputShape.empty()) {
      // output_shape may list the spatial dims only, or all of them.
      shape.push_back(outputShape[outputShape.size() - spatialRank + i]);
      continue;
    }
    int64_t in = x.getDimSize(i + 2);
    if (ShapedType::isDynamic(in)) {
      shape.push_back(kDynamic);
      continue;
    }
    int64_t stride = window.strides[i];
    if (getAutoPad() == "SAME_UPPER" || getAutoPad() == "SAME_LOWER") {
      shape.push_back(in * stride);
      continue;
    }
    int64_t out = stride * (in - 1) + outputPadding[i] +
                  (window.kernel[i] - 1) * window.dilations[i] + 1;
    if (getAutoPad() != "VALID")
      out -= window.pads[i] + window.pads[i + spatialRank];
    if (out < 1)
      return emitOpError() << "spatial dimension " << i
                           << " of the result would be " << out;
    shape.push_back(out);
  }
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult ONNXMaxPoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto x = getRankedType(getX());
  if (!x)
    return unranked(elementTypeOf(getX()), types);
  WindowGeometry window{toInts(getKernelShape()), toInts(getStrides()),
                        toInts(getDilations()), toInts(getPads()),
                        getAutoPad(), getCeilMode() != 0};
  SmallVector<int64_t> shape;
  if (failed(inferWindowResult(*this, x, x.getDimSize(1), window, shape)))
    return failure();
  types.push_back(tensorOf(shape, x.getElementType()));
  pushResult(types, getIndices(),
             tensorOf(shape, IntegerType::get(getContext(), 64)));
  return success();
}

LogicalResult
ONNXAveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto x = getRankedType(getX());
  if (!x)
    return unranked(elementTypeOf(getX()), types);
  WindowGeometry window{
      toInts(getKernelShape()), toInts(getStrides()), toInts(getDilations()),
      toInts(getPads()),        getAutoPad(),         getCeilMode() != 0};
  SmallVector<int64_t> shape;
  if (failed(inferWindowResult(*this, x, x.getDimSize(1), window, shape)))
    return failure();
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult
ONNXGlobalAveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto x = getRankedType(getX());
  if (!x)
    return unranked(elementTypeOf(getX()), types);
  if (x.getRank() < 3)
    return emitOpError("input X must have rank >= 3 (N x C x D1...)");
  SmallVector<int64_t> shape{x.getDimSize(0), x.getDimSize(1)};
  shape.resize(x.getRank(), 1);
  types.push_back(tensorOf(shape, x.getElementType()));
  return success();
}

LogicalResult
ONNXBatchNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  types.push_back(getX().getType());
  pushResult(types, getRunningMean(), getInputMean().getType());
  pushResult(types, getRunningVar(), getInputVar().getType());
  return success();
}

LogicalResult
ONNXLayerNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  types.push_back(getX().getType());
  auto x = getRankedType(getX());
  Type stashType = getElementTypeForONNXDataType(getContext(), getStashType());
  if (!stashType)
    return emitOpError() << "stash_type " << getStashType()
                         << " is not a float type";
  if (!x) {
    pushResult(types, getMean(), UnrankedTensorType::get(stashType));
    pushResult(types, getInvStdDev(), UnrankedTensorType::get(stashType));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), x.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(x.getShape());
  for (int64_t d = *axis; d < x.getRank(); ++d)
    shape[d] = 1;
  pushResult(types, getMean(), tensorOf(shape, stashType));
  pushResult(types, getInvStdDev(), tensorOf(shape, stashType));
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

llvm::Expected<EinsumSpec> ONNXEinsumOp::getSpec() {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : getInputs()) {
    auto type = getRankedType(input);
    if (!type)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "operands must be ranked");
    shapes.push_back(type.getShape());
  }
  return parseEinsum(getEquation(), shapes);
}

LogicalResult ONNXEinsumOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  Type elementType = elementTypeOf(getInputs()[0]);
  if (llvm::any_of(getInputs(),
                   [](Value input) { return !getRankedType(input); }))
    return unranked(elementType, types);
  for (Value input : getInputs())
    if (elementTypeOf(input) != elementType)
      return emitOpError("operands differ in element type");
  llvm::Expected<EinsumSpec> spec = getSpec();
  if (!spec)
    return emitOpError() << llvm::toString(spec.takeError());
  SmallVector<int64_t> shape = spec->outputShape();
  for (int64_t &dim : shape)
    if (dim < 0)
      dim = kDynamic;
  if (failed(checkRank(getOperation(), shape.size())))
    return failure();
  types.push_back(tensorOf(shape, elementType));
  return success();
}

LogicalResult ONNXMatMulOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto a = getRankedType(getA()), b = getRankedType(getB());
  if (!a || !b)
    return unranked(elementTypeOf(getA()), types);
  if (a.getRank() == 0 || b.getRank() == 0)
    return emitOpError("operands of MatMul must have rank >= 1");
  // numpy: a 1-d A is a row, a 1-d B a column; those unit dims go away.
  SmallVector<int64_t> aShape(a.getShape()), bShape(b.getShape());
  if (a.getRank() == 1)
    aShape.insert(aShape.begin(), 1);
  if (b.getRank() == 1)
    bShape.push_back(1);
  int64_t k1 = aShape.back(), k2 = bShape[bShape.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOpError() << "contraction dimensions differ: A has " << k1
                         << ", B has " << k2;
  SmallVector<int64_t> batch;
  if (!OpTrait::util::getBroadcastedShape(
          ArrayRef(aShape).drop_back(2), ArrayRef(bShape).drop_back(2), batch))
    return emitOpError("batch dimensions of A and B cannot be broadcast");
  if (a.getRank() != 1)
    batch.push_back(aShape[aShape.size() - 2]);
  if (b.getRank() != 1)
    batch.push_back(bShape.back());
  types.push_back(tensorOf(batch, a.getElementType()));
  return success();
}

LogicalResult ONNXGemmOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto a = getRankedType(getA()), b = getRankedType(getB());
  if (!a || !b)
    return unranked(elementTypeOf(getA()), types);
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError("A and B of Gemm must be 2-d");
  types.push_back(tensorOf({a.getDimSize(getTransA() ? 1 : 0),
                            b.getDimSize(getTransB() ? 0 : 1)},
                           a.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The reduced shape: `axes` (all when empty and `reduceAllWhenEmpty`)
/// become 1 with keepdims, or disappear.
static LogicalResult inferReduction(Operation *op, Value data,
                                    std::optional<SmallVector<int64_t>> axes,
                                    bool keepdims, bool reduceAllWhenEmpty,
                                    SmallVectorImpl<Type> &types) {
  auto type = getRankedType(data);
  if (!type)
    return unranked(elementTypeOf(data), types);
  if (!axes) {
    // Axes known only at run time: with keepdims the rank is still known.
    if (!keepdims)
      return unranked(type.getElementType(), types);
    types.push_back(tensorOf(SmallVector<int64_t>(type.getRank(), kDynamic),
                             type.getElementType()));
    return success();
  }
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(op, *axes, type.getRank());
  if (failed(normalized))
    return failure();
  if (normalized->empty() && !reduceAllWhenEmpty) {
    types.push_back(type);
    return success();
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool reduced = normalized->empty() || llvm::is_contained(*normalized, d);
    if (!reduced)
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult
ONNXReduceMeanOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  return inferReduction(*this, getData(), toInts(getAxes()), getKeepdims(),
                        /*reduceAllWhenEmpty=*/true, types);
}

LogicalResult ONNXReduceSumOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  std::optional<SmallVector<int64_t>> axes =
      isNone(getAxes()) ? SmallVector<int64_t>() : getConstantInts(getAxes());
  return inferReduction(*this, getData(), axes, getKeepdims(),
                        /*reduceAllWhenEmpty=*/!getNoopWithEmptyAxes(), types);
}
