//===- IRBuilding.cpp - builds onnx ops with their result types -----------===//

#include "vram/Training/IRBuilding.h"

#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace vram {

static RankedTensorType rankedType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

template <typename OpT>
Value IRBuilding::create(Type type, ValueRange operands,
                         ArrayRef<NamedAttribute> attributes) {
  return OpT::create(builder, loc, TypeRange{type}, operands, attributes)
      ->getResult(0);
}

Value IRBuilding::none() { return ONNXNoValueOp::create(builder, loc); }

Value IRBuilding::splat(RankedTensorType type, double value) {
  Attribute element =
      isa<FloatType>(type.getElementType())
          ? Attribute(builder.getFloatAttr(type.getElementType(), value))
          : Attribute(builder.getIntegerAttr(type.getElementType(),
                                             int64_t(value)));
  return create<ONNXConstantOp>(
      type, {},
      {builder.getNamedAttr("value", DenseElementsAttr::get(type, element))});
}

Value IRBuilding::scalar(Type elementType, double value) {
  return splat(RankedTensorType::get({}, elementType), value);
}

Value IRBuilding::int64s(ArrayRef<int64_t> values) {
  return ONNXConstantOp::create(builder, loc, values);
}

Value IRBuilding::int64s(ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, builder.getI64Type());
  return create<ONNXConstantOp>(
      type, {},
      {builder.getNamedAttr("value", DenseElementsAttr::get(type, values))});
}

Value IRBuilding::floats(RankedTensorType type, ArrayRef<double> values) {
  return create<ONNXConstantOp>(
      type, {},
      {builder.getNamedAttr("value", getFloatElements(type, values))});
}

Value IRBuilding::zeros(RankedTensorType type) {
  return create<ONNXExpandOp>(
      type, {scalar(type.getElementType(), 0.0), int64s(type.getShape())});
}

template <typename OpT> Value IRBuilding::broadcast(Value a, Value b) {
  Type type = OpTrait::util::getBroadcastedType(a.getType(), b.getType());
  return create<OpT>(type, {a, b});
}

Value IRBuilding::add(Value a, Value b) { return broadcast<ONNXAddOp>(a, b); }
Value IRBuilding::sub(Value a, Value b) { return broadcast<ONNXSubOp>(a, b); }
Value IRBuilding::mul(Value a, Value b) { return broadcast<ONNXMulOp>(a, b); }
Value IRBuilding::div(Value a, Value b) { return broadcast<ONNXDivOp>(a, b); }
Value IRBuilding::pow(Value a, Value b) { return broadcast<ONNXPowOp>(a, b); }

Value IRBuilding::equal(Value a, Value b) {
  Type type = OpTrait::util::getBroadcastedType(a.getType(), b.getType(),
                                                builder.getI1Type());
  return create<ONNXEqualOp>(type, {a, b});
}

Value IRBuilding::greater(Value a, Value b) {
  Type type = OpTrait::util::getBroadcastedType(a.getType(), b.getType(),
                                                builder.getI1Type());
  return create<ONNXGreaterOp>(type, {a, b});
}

Value IRBuilding::where(Value condition, Value a, Value b) {
  Type type = OpTrait::util::getBroadcastedType(
      OpTrait::util::getBroadcastedType(condition.getType(), a.getType(),
                                        getElementTypeOrSelf(a.getType())),
      b.getType());
  return create<ONNXWhereOp>(type, {condition, a, b});
}

template <typename OpT> Value IRBuilding::unary(Value x) {
  return create<OpT>(x.getType(), {x});
}

Value IRBuilding::neg(Value x) { return unary<ONNXNegOp>(x); }
Value IRBuilding::exp(Value x) { return unary<ONNXExpOp>(x); }
Value IRBuilding::log(Value x) { return unary<ONNXLogOp>(x); }
Value IRBuilding::erf(Value x) { return unary<ONNXErfOp>(x); }
Value IRBuilding::cos(Value x) { return unary<ONNXCosOp>(x); }
Value IRBuilding::sin(Value x) { return unary<ONNXSinOp>(x); }
Value IRBuilding::tanh(Value x) { return unary<ONNXTanhOp>(x); }
Value IRBuilding::sigmoid(Value x) { return unary<ONNXSigmoidOp>(x); }
Value IRBuilding::sqrt(Value x) { return unary<ONNXSqrtOp>(x); }

Value IRBuilding::trilu(Value x, Value k, bool upper) {
  return create<ONNXTriluOp>(
      x.getType(), {x, k},
      {builder.getNamedAttr("upper", builder.getI64IntegerAttr(upper))});
}

template <typename OpT>
Value IRBuilding::normalizeAlong(Value x, int64_t axis) {
  return create<OpT>(
      x.getType(), {x},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))});
}

Value IRBuilding::softmax(Value x, int64_t axis) {
  return normalizeAlong<ONNXSoftmaxOp>(x, axis);
}

Value IRBuilding::logSoftmax(Value x, int64_t axis) {
  return normalizeAlong<ONNXLogSoftmaxOp>(x, axis);
}

Value IRBuilding::cast(Value x, Type elementType) {
  auto type = rankedType(x);
  if (type.getElementType() == elementType)
    return x;
  // Callers pass the float and integer types of ONNX models, all mapped.
  int64_t to = *getONNXDataType(elementType);
  return create<ONNXCastOp>(
      type.clone(elementType), {x},
      {builder.getNamedAttr("to", builder.getI64IntegerAttr(to))});
}

Value IRBuilding::reshape(Value x, ArrayRef<int64_t> shape) {
  auto type = rankedType(x);
  if (type.getShape() == shape)
    return x;
  return create<ONNXReshapeOp>(type.clone(shape), {x, int64s(shape)});
}

Value IRBuilding::transpose(Value x, ArrayRef<int64_t> perm) {
  auto type = rankedType(x);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return create<ONNXTransposeOp>(
      type.clone(shape), {x},
      {builder.getNamedAttr("perm", builder.getI64ArrayAttr(perm))});
}

Value IRBuilding::expand(Value x, ArrayRef<int64_t> shape) {
  auto type = rankedType(x);
  if (type.getShape() == shape)
    return x;
  return create<ONNXExpandOp>(type.clone(shape), {x, int64s(shape)});
}

Value IRBuilding::slice(Value x, ArrayRef<int64_t> starts,
                        ArrayRef<int64_t> ends, ArrayRef<int64_t> axes) {
  auto type = rankedType(x);
  SmallVector<int64_t> shape(type.getShape());
  for (auto [start, end, axis] : llvm::zip(starts, ends, axes))
    shape[axis] = end - start;
  return create<ONNXSliceOp>(type.clone(shape),
                             {x, int64s(starts), int64s(ends), int64s(axes),
                              none()});
}

Value IRBuilding::pad(Value x, ArrayRef<int64_t> pads, Type resultType) {
  return create<ONNXPadOp>(resultType, {x, int64s(pads), none()});
}

Value IRBuilding::concat(ValueRange parts, int64_t axis, Type resultType) {
  return create<ONNXConcatOp>(
      resultType, parts,
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))});
}

Value IRBuilding::gather(Value data, Value indices, int64_t axis) {
  auto dataType = rankedType(data);
  auto indicesType = rankedType(indices);
  SmallVector<int64_t> shape(dataType.getShape().take_front(axis));
  llvm::append_range(shape, indicesType.getShape());
  llvm::append_range(shape, dataType.getShape().drop_front(axis + 1));
  return create<ONNXGatherOp>(
      RankedTensorType::get(shape, dataType.getElementType()), {data, indices},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis))});
}

Value IRBuilding::scatterAdd(Value data, Value indices, Value updates,
                             int64_t axis) {
  return create<ONNXScatterElementsOp>(
      data.getType(), {data, indices, updates},
      {builder.getNamedAttr("axis", builder.getI64IntegerAttr(axis)),
       builder.getNamedAttr("reduction", builder.getStringAttr("add"))});
}

Value IRBuilding::einsum(StringRef equation, ValueRange inputs,
                         Type resultType) {
  return create<ONNXEinsumOp>(
      resultType, inputs,
      {builder.getNamedAttr("equation", builder.getStringAttr(equation))});
}

Value IRBuilding::scatterND(Value data, Value indices, Value updates) {
  return create<ONNXScatterNDOp>(data.getType(), {data, indices, updates}, {});
}

template <typename OpT>
Value IRBuilding::reduce(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  auto type = rankedType(x);
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(type.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  NamedAttribute keep =
      builder.getNamedAttr("keepdims", builder.getI64IntegerAttr(keepdims));
  if constexpr (std::is_same_v<OpT, ONNXReduceSumOp>)
    return create<OpT>(type.clone(shape), {x, int64s(axes)}, {keep});
  else
    return create<OpT>(
        type.clone(shape), {x},
        {keep, builder.getNamedAttr("axes", builder.getI64ArrayAttr(axes))});
}

Value IRBuilding::reduceSum(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ONNXReduceSumOp>(x, axes, keepdims);
}

Value IRBuilding::reduceMean(Value x, ArrayRef<int64_t> axes, bool keepdims) {
  return reduce<ONNXReduceMeanOp>(x, axes, keepdims);
}

Value IRBuilding::sumTo(Value grad, Type target) {
  auto gradType = rankedType(grad);
  auto targetType = llvm::cast<RankedTensorType>(target);
  if (gradType.getShape() == targetType.getShape())
    return grad;
  // Leading dimensions the operand lacks, and those it had as 1, were
  // broadcast: their gradients add up.
  int64_t extra = gradType.getRank() - targetType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < gradType.getRank(); ++i)
    if (i < extra || (targetType.getDimSize(i - extra) == 1 &&
                      gradType.getDimSize(i) != 1))
      axes.push_back(i);
  Value summed = axes.empty() ? grad : reduceSum(grad, axes, /*keepdims=*/true);
  return reshape(summed, targetType.getShape());
}

Value IRBuilding::gemm(Value a, Value b, int64_t transA, int64_t transB,
                       double alpha, Type resultType) {
  SmallVector<NamedAttribute> attributes{
      builder.getNamedAttr("transA", builder.getI64IntegerAttr(transA)),
      builder.getNamedAttr("transB", builder.getI64IntegerAttr(transB))};
  if (alpha != 1.0)
    attributes.push_back(
        builder.getNamedAttr("alpha", builder.getF32FloatAttr(alpha)));
  return create<ONNXGemmOp>(resultType, {a, b, none()}, attributes);
}

Value IRBuilding::matmul(Value a, Value b) {
  auto aType = rankedType(a), bType = rankedType(b);
  SmallVector<int64_t> batch;
  bool ok = OpTrait::util::getBroadcastedShape(
      aType.getShape().drop_back(2), bType.getShape().drop_back(2), batch);
  (void)ok;
  assert(ok && "operands of a forward MatMul broadcast");
  batch.push_back(aType.getDimSize(aType.getRank() - 2));
  batch.push_back(bType.getDimSize(bType.getRank() - 1));
  return create<ONNXMatMulOp>(aType.clone(batch), {a, b});
}

/// The attributes of a Conv or ConvTranspose over `window` with `group`.
static SmallVector<NamedAttribute>
getWindowAttributes(OpBuilder &builder, const ConvWindow &window,
                    int64_t group) {
  SmallVector<NamedAttribute> attributes{
      builder.getNamedAttr("dilations",
                           builder.getI64ArrayAttr(window.dilations)),
      builder.getNamedAttr("kernel_shape",
                           builder.getI64ArrayAttr(window.kernel)),
      builder.getNamedAttr("pads", builder.getI64ArrayAttr(window.pads)),
      builder.getNamedAttr("strides", builder.getI64ArrayAttr(window.strides))};
  if (group != 1)
    attributes.push_back(
        builder.getNamedAttr("group", builder.getI64IntegerAttr(group)));
  return attributes;
}

Value IRBuilding::conv(Value x, Value w, const ConvWindow &window,
                       int64_t group, Type resultType) {
  return create<ONNXConvOp>(resultType, {x, w, none()},
                            getWindowAttributes(builder, window, group));
}

Value IRBuilding::convTranspose(Value x, Value w, const ConvWindow &window,
                                int64_t group, ArrayRef<int64_t> outputPadding,
                                Type resultType) {
  SmallVector<NamedAttribute> attributes =
      getWindowAttributes(builder, window, group);
  if (llvm::any_of(outputPadding, [](int64_t p) { return p != 0; }))
    attributes.push_back(builder.getNamedAttr(
        "output_padding", builder.getI64ArrayAttr(outputPadding)));
  return create<ONNXConvTransposeOp>(resultType, {x, w, none()}, attributes);
}

} // namespace vram
