//===- GenericNodeTypes.cpp - result types of unmodelled ONNX operators ---===//

#include "GenericNodeTypes.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;

namespace vram {

/// Operators whose only output has the type of their first input.
static bool keepsFirstInputType(StringRef op) {
  static const llvm::StringSet<> ops = {"Abs",
                                        "Acos",
                                        "Asin",
                                        "Atan",
                                        "Ceil",
                                        "Celu",
                                        "Cos",
                                        "Cosh",
                                        "CumSum",
                                        "Elu",
                                        "Floor",
                                        "GroupNormalization",
                                        "Hardmax",
                                        "InstanceNormalization",
                                        "LpNormalization",
                                        "Mish",
                                        "Round",
                                        "Selu",
                                        "Shrink",
                                        "Sign",
                                        "Sin",
                                        "Sinh",
                                        "Softplus",
                                        "Softsign",
                                        "Tan",
                                        "ThresholdedRelu",
                                        "Trilu",
                                        "BitwiseNot",
                                        "MeanVarianceNormalization",
                                        "RMSNormalization"};
  return ops.contains(op);
}

/// Broadcasting operators whose output is boolean.
static bool isComparison(StringRef op) {
  return llvm::is_contained(
      {"LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}, op);
}

/// Broadcasting operators whose output has their first input's element type.
static bool isVariadicBroadcast(StringRef op) {
  return llvm::is_contained({"Min", "Max", "Sum", "Mean", "Mod", "PRelu",
                             "BitwiseAnd", "BitwiseOr", "BitwiseXor"},
                            op);
}

static std::optional<Type> broadcastOperands(ValueRange operands,
                                             Type elementType) {
  SmallVector<int64_t> shape;
  for (auto [i, operand] : llvm::enumerate(operands)) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type)
      return std::nullopt;
    SmallVector<int64_t> next;
    if (i == 0)
      next.assign(type.getShape().begin(), type.getShape().end());
    else if (!OpTrait::util::getBroadcastedShape(shape, type.getShape(), next))
      return std::nullopt;
    shape = std::move(next);
  }
  return RankedTensorType::get(shape, elementType);
}

static Attribute findAttribute(ArrayRef<NamedAttribute> attributes,
                               StringRef name) {
  for (NamedAttribute attr : attributes)
    if (attr.getName() == name)
      return attr.getValue();
  return {};
}

template <typename T> static std::optional<T> constantScalar(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  if (auto ints = dyn_cast<DenseIntElementsAttr>(attr))
    return T((*ints.getValues<APInt>().begin()).getSExtValue());
  if (auto floats = dyn_cast<DenseFPElementsAttr>(attr))
    return T((*floats.getValues<APFloat>().begin()).convertToDouble());
  return std::nullopt;
}

/// Attention (opset 23) on 4-d Q [B, Hq, Sq, D], K [B, Hkv, Skv, D] and
/// V [B, Hkv, Skv, Dv] without past keys: Y [B, Hq, Sq, Dv], then the
/// present key and value (K and V) and the scores [B, Hq, Sq, Skv].
static std::optional<SmallVector<Type>> inferAttentionTypes(ValueRange operands,
                                                            size_t numOutputs) {
  if (operands.size() < 3 || operands.size() > 4 || numOutputs > 4)
    return std::nullopt;
  SmallVector<RankedTensorType> types;
  for (Value operand : operands.take_front(3)) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || type.getRank() != 4)
      return std::nullopt;
    types.push_back(type);
  }
  ArrayRef<int64_t> q = types[0].getShape(), k = types[1].getShape(),
                    v = types[2].getShape();
  Type elementType = types[0].getElementType();
  SmallVector<Type> results{
      RankedTensorType::get({q[0], q[1], q[2], v[3]}, elementType), types[1],
      types[2], RankedTensorType::get({q[0], q[1], q[2], k[2]}, elementType)};
  results.resize(numOutputs);
  return results;
}

std::optional<SmallVector<Type>>
inferGenericNodeTypes(StringRef op, bool isDefaultDomain, ValueRange operands,
                      ArrayRef<NamedAttribute> attributes, size_t numOutputs) {
  if (!isDefaultDomain || operands.empty())
    return std::nullopt;
  if (op == "Attention")
    return inferAttentionTypes(operands, numOutputs);
  if (numOutputs != 1)
    return std::nullopt;
  MLIRContext *context = operands.front().getContext();
  Type first = operands.front().getType();
  auto firstElement = [&] { return cast<ShapedType>(first).getElementType(); };
  std::optional<Type> result;
  if (keepsFirstInputType(op))
    result = first;
  else if (isComparison(op))
    result = broadcastOperands(operands, IntegerType::get(context, 1));
  else if (isVariadicBroadcast(op))
    result = broadcastOperands(operands, firstElement());
  else if (op == "IsNaN" || op == "IsInf")
    result = cast<ShapedType>(first).clone(IntegerType::get(context, 1));
  if (op == "RandomNormalLike" || op == "Bernoulli") {
    // The input's shape; `dtype` (a TensorProto.DataType) or the input's type.
    Type elementType = firstElement();
    if (auto dtype =
            dyn_cast_if_present<IntegerAttr>(findAttribute(attributes, "dtype")))
      elementType = getElementTypeForONNXDataType(context, dtype.getInt());
    if (!elementType)
      return std::nullopt;
    result = cast<ShapedType>(first).clone(elementType);
  }
  if (op == "ConstantOfShape") {
    std::optional<SmallVector<int64_t>> shape = getConstantInts(operands[0]);
    if (!shape || shape->size() > 64 ||
        llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
      return std::nullopt;
    Type elementType = Float32Type::get(context);
    if (auto value =
            dyn_cast_if_present<ElementsAttr>(findAttribute(attributes, "value")))
      elementType = value.getElementType();
    result = RankedTensorType::get(*shape, elementType);
  }
  if (op == "Range" && operands.size() == 3) {
    // ONNX: max(ceil((limit - start) / delta), 0) elements.
    std::optional<double> start = constantScalar<double>(operands[0]);
    std::optional<double> limit = constantScalar<double>(operands[1]);
    std::optional<double> delta = constantScalar<double>(operands[2]);
    int64_t count = ShapedType::kDynamic;
    if (start && limit && delta && *delta != 0) {
      double steps = std::ceil((*limit - *start) / *delta);
      if (!(steps < 9.0e18))
        return std::nullopt;
      count = std::max<int64_t>(int64_t(steps), 0);
    }
    result = RankedTensorType::get({count}, firstElement());
  }
  if (!result)
    return std::nullopt;
  return SmallVector<Type>{*result};
}

} // namespace vram
