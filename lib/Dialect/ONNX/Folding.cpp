//===- Folding.cpp - constant folding of ONNX shape computations ----------===//
//
// Exporters compute shapes in the graph (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, sizes multiplied and divided). Folding those small
// integer computations to constants gives the ops they feed static result
// types. Only small integer tensors are folded: this is shape arithmetic,
// not constant propagation of weights.
//
//===----------------------------------------------------------------------===//

#include "OpHelpers.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace mlir;
using namespace vram;
using namespace vram::detail;

/// Largest tensor a folder produces.
static constexpr int64_t kMaxFoldedElements = 1024;

static RankedTensorType foldableResultType(Value result) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxFoldedElements)
    return {};
  return type;
}

/// Integer values of a constant operand's attribute.
static std::optional<SmallVector<int64_t>> intValues(Attribute attr) {
  auto dense = dyn_cast_if_present<DenseIntElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldedElements)
    return std::nullopt;
  SmallVector<int64_t> values;
  bool isUnsigned = dense.getElementType().isUnsignedInteger();
  for (const APInt &v : dense.getValues<APInt>())
    values.push_back(isUnsigned ? int64_t(v.getZExtValue()) : v.getSExtValue());
  return values;
}

/// A dense attribute of integer `type` holding `values`.
static Attribute intAttr(RankedTensorType type, ArrayRef<int64_t> values) {
  auto elementType = dyn_cast<IntegerType>(type.getElementType());
  if (!elementType ||
      static_cast<int64_t>(values.size()) != type.getNumElements())
    return {};
  SmallVector<APInt> bits;
  for (int64_t v : values)
    bits.push_back(APInt(elementType.getWidth(), v, /*isSigned=*/true,
                         /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, bits);
}

/// Row-major strides of `shape`.
static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Index into an operand of `shape` broadcast to `resultShape`.
static int64_t broadcastIndex(int64_t flat, ArrayRef<int64_t> resultShape,
                              ArrayRef<int64_t> shape) {
  SmallVector<int64_t> resultStrides = stridesOf(resultShape);
  SmallVector<int64_t> strides = stridesOf(shape);
  int64_t offset = resultShape.size() - shape.size(), index = 0;
  for (size_t d = 0; d < resultShape.size(); ++d) {
    int64_t coordinate = (flat / resultStrides[d]) % resultShape[d];
    if (d >= static_cast<size_t>(offset) && shape[d - offset] != 1)
      index += coordinate * strides[d - offset];
  }
  return index;
}

/// Folds an integer binary op with broadcasting.
template <typename Fn>
static OpFoldResult foldIntBinary(Operation *op, Attribute lhs, Attribute rhs,
                                  Fn fn) {
  auto type = foldableResultType(op->getResult(0));
  std::optional<SmallVector<int64_t>> a = intValues(lhs), b = intValues(rhs);
  if (!type || !a || !b)
    return {};
  auto aShape = cast<ShapedType>(cast<TypedAttr>(lhs).getType()).getShape();
  auto bShape = cast<ShapedType>(cast<TypedAttr>(rhs).getType()).getShape();
  SmallVector<int64_t> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    std::optional<int64_t> v =
        fn((*a)[broadcastIndex(i, type.getShape(), aShape)],
           (*b)[broadcastIndex(i, type.getShape(), bShape)]);
    if (!v)
      return {};
    values.push_back(*v);
  }
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> bits(values.begin(), values.end());
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return intAttr(type, values);
}

OpFoldResult ONNXAddOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(*this, adaptor.getA(), adaptor.getB(),
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         return a + b;
                       });
}

OpFoldResult ONNXSubOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(*this, adaptor.getA(), adaptor.getB(),
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         return a - b;
                       });
}

OpFoldResult ONNXMulOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(*this, adaptor.getA(), adaptor.getB(),
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         return a * b;
                       });
}

OpFoldResult ONNXDivOp::fold(FoldAdaptor adaptor) {
  // Integer Div truncates, as ONNX Runtime does; never fold a division by 0.
  return foldIntBinary(*this, adaptor.getA(), adaptor.getB(),
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         if (b == 0)
                           return std::nullopt;
                         return a / b;
                       });
}

OpFoldResult ONNXGreaterOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(*this, adaptor.getA(), adaptor.getB(),
                       [](int64_t a, int64_t b) -> std::optional<int64_t> {
                         return a > b;
                       });
}

OpFoldResult ONNXLessOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(
      *this, adaptor.getA(), adaptor.getB(),
      [](int64_t a, int64_t b) -> std::optional<int64_t> { return a < b; });
}

OpFoldResult ONNXNotOp::fold(FoldAdaptor adaptor) {
  auto mask = dyn_cast_if_present<DenseElementsAttr>(adaptor.getX());
  if (!mask || !mask.getElementType().isInteger(1))
    return {};
  SmallVector<bool> negated;
  for (bool bit : mask.getValues<bool>())
    negated.push_back(!bit);
  return DenseElementsAttr::get(mask.getType(), ArrayRef<bool>(negated));
}

OpFoldResult ONNXEqualOp::fold(FoldAdaptor adaptor) {
  return foldIntBinary(
      *this, adaptor.getA(), adaptor.getB(),
      [](int64_t a, int64_t b) -> std::optional<int64_t> { return a == b; });
}

/// The integer binary operators of the default domain that shape
/// computations use, by op_type; null for others.
using IntBinaryFn = std::optional<int64_t> (*)(int64_t, int64_t);
static IntBinaryFn getGenericIntBinary(ONNXNodeOp op) {
  StringRef type = op.getOpType();
  if (type == "Mod") {
    // fmod = 1: the sign of the dividend (C's %); 0: of the divisor.
    auto fmod = op->getAttrOfType<IntegerAttr>("fmod");
    if (fmod && fmod.getInt() != 0)
      return [](int64_t a, int64_t b) -> std::optional<int64_t> {
        if (b == 0)
          return std::nullopt;
        return a % b;
      };
    return [](int64_t a, int64_t b) -> std::optional<int64_t> {
      if (b == 0)
        return std::nullopt;
      int64_t r = a % b;
      return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
    };
  }
  return llvm::StringSwitch<IntBinaryFn>(type)
      .Case("Min",
            [](int64_t a, int64_t b) -> std::optional<int64_t> {
              return std::min(a, b);
            })
      .Case("Max",
            [](int64_t a, int64_t b) -> std::optional<int64_t> {
              return std::max(a, b);
            })
      .Case(
          "Less",
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a < b; })
      .Case(
          "LessOrEqual",
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a <= b; })
      .Case(
          "GreaterOrEqual",
          [](int64_t a, int64_t b) -> std::optional<int64_t> { return a >= b; })
      .Default(nullptr);
}

/// ConstantOfShape of a constant shape: a splat of its `value` (default
/// float 0), whose result type the importer already made static.
static OpFoldResult foldConstantOfShape(ONNXNodeOp op, Attribute shape) {
  auto type = getRankedType(op->getResult(0));
  if (!type || !type.hasStaticShape() || !shape)
    return {};
  auto value = op->getAttrOfType<DenseElementsAttr>("value");
  if (!value)
    return DenseElementsAttr::get(
        type, FloatAttr::get(Float32Type::get(op.getContext()), 0.0));
  if (value.getNumElements() != 1 ||
      value.getElementType() != type.getElementType())
    return {};
  return DenseElementsAttr::get(type, value.getValues<Attribute>()[0]);
}

/// Range of constant integer start, limit and delta: start + i delta for
/// each i of the result, whose size the importer already worked out.
static OpFoldResult foldRange(ONNXNodeOp op, ArrayRef<Attribute> inputs) {
  auto type = foldableResultType(op->getResult(0));
  if (!type || type.getRank() != 1 || inputs.size() != 3)
    return {};
  std::optional<SmallVector<int64_t>> start = intValues(inputs[0]);
  std::optional<SmallVector<int64_t>> delta = intValues(inputs[2]);
  if (!start || !delta || start->size() != 1 || delta->size() != 1)
    return {};
  SmallVector<int64_t> values;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    values.push_back((*start)[0] + i * (*delta)[0]);
  return intAttr(type, values);
}

LogicalResult ONNXNodeOp::fold(FoldAdaptor adaptor,
                               SmallVectorImpl<OpFoldResult> &results) {
  if (!getDomain().empty() || getNumResults() != 1)
    return failure();
  StringRef type = getOpType();
  ArrayRef<Attribute> inputs = adaptor.getInputs();
  OpFoldResult folded;
  if (type == "ConstantOfShape" && inputs.size() == 1)
    folded = foldConstantOfShape(*this, inputs[0]);
  else if (type == "Range")
    folded = foldRange(*this, inputs);
  else if (IntBinaryFn fn = getGenericIntBinary(*this);
           fn && inputs.size() == 2)
    folded = foldIntBinary(*this, inputs[0], inputs[1], fn);
  if (!folded)
    return failure();
  results.push_back(folded);
  return success();
}

OpFoldResult ONNXShapeOp::fold(FoldAdaptor) {
  auto input = getRankedType(getData());
  auto type = foldableResultType(getShape());
  if (!input || !input.hasStaticShape() || !type)
    return {};
  int64_t rank = input.getRank();
  auto clampToRank = [&](int64_t index) {
    return std::clamp(index < 0 ? index + rank : index, int64_t(0), rank);
  };
  int64_t start = clampToRank(getStart());
  int64_t end = getEnd() ? clampToRank(*getEnd()) : rank;
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(input.getDimSize(d));
  return intAttr(type, dims);
}

OpFoldResult ONNXGatherOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getOutput());
  auto dataType = getRankedType(getData());
  std::optional<SmallVector<int64_t>> data = intValues(adaptor.getData());
  std::optional<SmallVector<int64_t>> indices = intValues(adaptor.getIndices());
  if (!type || !dataType || !data || !indices)
    return {};
  int64_t rank = dataType.getRank();
  // I64Attr reads as uint64_t: a negative axis must be cast back first.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return {};
  ArrayRef<int64_t> shape = dataType.getShape();
  int64_t outer = 1, inner = 1, extent = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  SmallVector<int64_t> values;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : *indices) {
      if (index < -extent || index >= extent)
        return {}; // Out of range: the run-time error is not ours to fold.
      int64_t i = index < 0 ? index + extent : index;
      for (int64_t n = 0; n < inner; ++n)
        values.push_back((*data)[(o * extent + i) * inner + n]);
    }
  return intAttr(type, values);
}

OpFoldResult ONNXConcatOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getConcatResult());
  if (!type || type.getRank() != 1)
    return {};
  SmallVector<int64_t> values;
  for (Attribute input : adaptor.getInputs()) {
    std::optional<SmallVector<int64_t>> part = intValues(input);
    if (!part)
      return {};
    llvm::append_range(values, *part);
  }
  return intAttr(type, values);
}

/// Unsqueeze, Squeeze and Reshape keep the data, in a new shape.
static OpFoldResult foldReshapedConstant(Attribute input, Value result) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(input);
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!dense || !type || !type.hasStaticShape() ||
      type.getNumElements() != dense.getNumElements())
    return {};
  return dense.reshape(type);
}

OpFoldResult ONNXIdentityOp::fold(FoldAdaptor adaptor) {
  return adaptor.getX();
}

OpFoldResult ONNXUnsqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapedConstant(adaptor.getData(), getExpanded());
}

OpFoldResult ONNXSqueezeOp::fold(FoldAdaptor adaptor) {
  return foldReshapedConstant(adaptor.getData(), getSqueezed());
}

OpFoldResult ONNXReshapeOp::fold(FoldAdaptor adaptor) {
  return foldReshapedConstant(adaptor.getData(), getReshaped());
}

/// The elements of a result of `resultShape` that reads
/// data[offset + sum over d of i[d] * strides[d]] at index i: a strided
/// view (Slice) or a permutation (Transpose) of row-major `data`.
static SmallVector<int64_t> readStrided(ArrayRef<int64_t> data,
                                        ArrayRef<int64_t> resultShape,
                                        int64_t offset,
                                        ArrayRef<int64_t> strides) {
  SmallVector<int64_t> resultStrides = stridesOf(resultShape);
  int64_t count = 1;
  for (int64_t size : resultShape)
    count *= size;
  SmallVector<int64_t> values;
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t index = offset;
    for (size_t d = 0; d < resultShape.size(); ++d)
      index += (flat / resultStrides[d]) % resultShape[d] * strides[d];
    values.push_back(data[index]);
  }
  return values;
}

OpFoldResult ONNXSliceOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getOutput());
  auto dataType = getRankedType(getData());
  std::optional<SmallVector<int64_t>> data = intValues(adaptor.getData());
  std::optional<SmallVector<int64_t>> starts = intValues(adaptor.getStarts());
  if (!type || !dataType || !dataType.hasStaticShape() || !data || !starts)
    return {};
  int64_t rank = dataType.getRank();
  SmallVector<int64_t> allAxes(starts->size());
  std::iota(allAxes.begin(), allAxes.end(), 0);
  std::optional<SmallVector<int64_t>> axes = isa<NoneType>(getAxes().getType())
                                                 ? allAxes
                                                 : intValues(adaptor.getAxes());
  std::optional<SmallVector<int64_t>> steps =
      isa<NoneType>(getSteps().getType())
          ? SmallVector<int64_t>(starts->size(), 1)
          : intValues(adaptor.getSteps());
  if (!axes || !steps || axes->size() != starts->size() ||
      steps->size() != starts->size())
    return {};
  // The result type already holds each clamped extent; walk it from the
  // clamped start of every sliced axis.
  SmallVector<int64_t> strides = stridesOf(dataType.getShape());
  int64_t offset = 0;
  for (auto [axis, first, step] : llvm::zip(*axes, *starts, *steps)) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank || step == 0)
      return {};
    int64_t size = dataType.getDimSize(axis);
    int64_t at = first < 0 ? first + size : first;
    at = step > 0 ? std::clamp<int64_t>(at, 0, size)
                  : std::clamp<int64_t>(at, 0, size - 1);
    offset += at * strides[axis];
    strides[axis] *= step;
  }
  return intAttr(type, readStrided(*data, type.getShape(), offset, strides));
}

OpFoldResult ONNXTransposeOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getTransposed());
  auto dataType = getRankedType(getData());
  std::optional<SmallVector<int64_t>> data = intValues(adaptor.getData());
  if (!type || !dataType || !dataType.hasStaticShape() || !data)
    return {};
  int64_t rank = dataType.getRank();
  SmallVector<int64_t> perm(rank);
  if (std::optional<ArrayAttr> attr = getPerm())
    perm = llvm::to_vector(
        llvm::map_range(attr->getAsRange<IntegerAttr>(),
                        [](IntegerAttr a) { return a.getInt(); }));
  else
    for (int64_t d = 0; d < rank; ++d)
      perm[d] = rank - 1 - d;
  // Result dimension d walks data dimension perm[d] with its stride.
  SmallVector<int64_t> dataStrides = stridesOf(dataType.getShape());
  SmallVector<int64_t> strides;
  for (int64_t d : perm)
    strides.push_back(dataStrides[d]);
  return intAttr(type, readStrided(*data, type.getShape(), 0, strides));
}

OpFoldResult ONNXWhereOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getOutput());
  auto condition =
      dyn_cast_if_present<DenseElementsAttr>(adaptor.getCondition());
  std::optional<SmallVector<int64_t>> x = intValues(adaptor.getX());
  std::optional<SmallVector<int64_t>> y = intValues(adaptor.getY());
  if (!type || !condition || !condition.getElementType().isInteger(1) || !x ||
      !y || type.getElementType().isInteger(1))
    return {};
  auto shapeOf = [](Attribute attr) {
    return cast<ShapedType>(cast<TypedAttr>(attr).getType()).getShape();
  };
  SmallVector<bool> mask(condition.getValues<bool>());
  SmallVector<int64_t> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    bool pick = mask[broadcastIndex(i, type.getShape(), shapeOf(condition))];
    values.push_back(
        pick ? (*x)[broadcastIndex(i, type.getShape(), shapeOf(adaptor.getX()))]
             : (*y)[broadcastIndex(i, type.getShape(),
                                   shapeOf(adaptor.getY()))]);
  }
  return intAttr(type, values);
}

OpFoldResult ONNXCastOp::fold(FoldAdaptor adaptor) {
  auto type = foldableResultType(getOutput());
  std::optional<SmallVector<int64_t>> values = intValues(adaptor.getInput());
  if (!type || !values)
    return {};
  if (isa<IntegerType>(type.getElementType()) &&
      !type.getElementType().isInteger(1))
    return intAttr(type, *values);
  if (auto floatType = dyn_cast<FloatType>(type.getElementType())) {
    SmallVector<APFloat> floats;
    for (int64_t v : *values) {
      APFloat f(static_cast<double>(v));
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      floats.push_back(f);
    }
    return DenseElementsAttr::get(type, floats);
  }
  return {};
}
