//===- ShapeOpsInference.cpp - result types of the shape ops -------------===//
//
// ONNX's shape inference of the ops that rearrange data (Flatten, Reshape,
// Transpose, Concat, Split, Slice, Gather, Shape, Unsqueeze, Squeeze,
// Expand, Pad, Resize). As in ShapeInference.cpp, constant operands give
// static shapes and values known only at run time dynamic dimensions.
//
//===----------------------------------------------------------------------===//

#include "ShapeInference.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace vram;
using namespace vram::detail;

LogicalResult ONNXFlattenOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getInput());
  if (!type)
    return unranked(elementTypeOf(getInput()), types);
  FailureOr<int64_t> axis =
      normalizeAxis(*this, getAxis(), type.getRank(), /*allowRank=*/true);
  if (failed(axis))
    return failure();
  std::optional<int64_t> outer = product(type.getShape().take_front(*axis));
  std::optional<int64_t> inner = product(type.getShape().drop_front(*axis));
  if (!outer || !inner)
    return tooManyElements(*this);
  types.push_back(tensorOf({*outer, *inner}, type.getElementType()));
  return success();
}

LogicalResult ONNXReshapeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  Type elementType = elementTypeOf(getData());
  auto shapeType = getRankedType(getShape());
  if (!shapeType || shapeType.getRank() != 1 ||
      ShapedType::isDynamic(shapeType.getDimSize(0)))
    return unranked(elementType, types);
  if (failed(checkRank(*this, shapeType.getDimSize(0))))
    return failure();
  std::optional<SmallVector<int64_t>> target = getConstantInts(getShape());
  if (!target) {
    types.push_back(tensorOf(
        SmallVector<int64_t>(shapeType.getDimSize(0), kDynamic), elementType));
    return success();
  }
  auto data = getRankedType(getData());
  SmallVector<int64_t> shape;
  int64_t inferred = -1;
  for (auto [i, dim] : llvm::enumerate(*target)) {
    if (dim == 0 && !getAllowzero()) {
      if (!data || static_cast<int64_t>(i) >= data.getRank()) {
        if (!data) {
          shape.push_back(kDynamic);
          continue;
        }
        return emitOpError()
               << "shape entry " << i << " is 0 (copy), but the input has rank "
               << data.getRank();
      }
      shape.push_back(data.getDimSize(i));
      continue;
    }
    if (dim == -1) {
      if (inferred >= 0)
        return emitOpError("shape has more than one -1");
      inferred = i;
      shape.push_back(kDynamic);
      continue;
    }
    if (dim < 0)
      return emitOpError() << "shape entry " << i << " is " << dim;
    shape.push_back(dim);
  }
  if (inferred >= 0 && data && data.hasStaticShape()) {
    SmallVector<int64_t> others(shape);
    others[inferred] = 1;
    std::optional<int64_t> known = product(others);
    if (!known)
      return tooManyElements(*this);
    if (!ShapedType::isDynamic(*known)) {
      if (*known == 0 || data.getNumElements() % *known != 0)
        return emitOpError() << "cannot reshape " << data.getNumElements()
                             << " elements into a shape with " << *known
                             << " elements per -1 entry";
      shape[inferred] = data.getNumElements() / *known;
    }
  }
  std::optional<int64_t> total = product(shape);
  if (!total)
    return tooManyElements(*this);
  if (data && data.hasStaticShape() && !ShapedType::isDynamic(*total) &&
      *total != data.getNumElements())
    return emitOpError() << "cannot reshape " << data.getNumElements()
                         << " elements into " << *total;
  types.push_back(tensorOf(shape, elementType));
  return success();
}

LogicalResult ONNXTransposeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getData());
  if (!type)
    return unranked(elementTypeOf(getData()), types);
  SmallVector<int64_t> perm = toInts(getPerm());
  if (!getPerm())
    for (int64_t d = type.getRank() - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return emitOpError() << "perm has " << perm.size() << " entries for rank "
                         << type.getRank();
  SmallVector<int64_t> shape;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank() || !seen.insert(p).second)
      return emitOpError("perm is not a permutation of the dimensions");
    shape.push_back(type.getDimSize(p));
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult ONNXConcatOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  Type elementType = elementTypeOf(getInputs().front());
  RankedTensorType first;
  for (Value input : getInputs())
    if ((first = getRankedType(input)))
      break;
  if (!first)
    return unranked(elementType, types);
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value input : getInputs()) {
    auto type = getRankedType(input);
    if (!type) {
      shape[*axis] = kDynamic;
      continue;
    }
    if (type.getRank() != first.getRank())
      return emitOpError() << "inputs must all have rank " << first.getRank();
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t size = type.getDimSize(d);
      if (d == *axis) {
        shape[d] =
            ShapedType::isDynamic(size) || ShapedType::isDynamic(shape[d])
                ? kDynamic
                : shape[d] + size;
        continue;
      }
      if (ShapedType::isDynamic(shape[d]))
        shape[d] = size;
      else if (!ShapedType::isDynamic(size) && size != shape[d])
        return emitOpError() << "inputs differ in dimension " << d;
    }
  }
  types.push_back(tensorOf(shape, elementType));
  return success();
}

LogicalResult ONNXSplitOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getInput());
  int64_t parts = getNumResults();
  if (!type) {
    for (int64_t i = 0; i < parts; ++i)
      types.push_back(UnrankedTensorType::get(elementTypeOf(getInput())));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), type.getRank());
  if (failed(axis))
    return failure();
  int64_t extent = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (!isNone(getSplit())) {
    std::optional<SmallVector<int64_t>> split = getConstantInts(getSplit());
    if (split) {
      if (static_cast<int64_t>(split->size()) != parts)
        return emitOpError() << "split has " << split->size() << " sizes for "
                             << parts << " outputs";
      sizes = *split;
    } else {
      sizes.assign(parts, kDynamic);
    }
  } else if (ShapedType::isDynamic(extent)) {
    sizes.assign(parts, kDynamic);
  } else {
    if (extent % parts != 0)
      return emitOpError() << "cannot split " << extent << " into " << parts
                           << " equal parts";
    sizes.assign(parts, extent / parts);
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (!ShapedType::isDynamic(size) && size < 0)
      return emitOpError("split sizes must be non-negative");
    total = ShapedType::isDynamic(size) || ShapedType::isDynamic(total)
                ? kDynamic
                : total + size;
  }
  if (!ShapedType::isDynamic(total) && !ShapedType::isDynamic(extent) &&
      total != extent)
    return emitOpError() << "split sizes add up to " << total << ", not "
                         << extent;
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = size;
    types.push_back(tensorOf(shape, type.getElementType()));
  }
  return success();
}

/// ONNX Slice: the number of elements a (start, end, step) slice selects
/// from a dimension of `size`, with the clamping rules of the spec.
static int64_t sliceExtent(int64_t start, int64_t end, int64_t step,
                           int64_t size) {
  auto clampIndex = [&](int64_t index, int64_t low, int64_t high) {
    if (index < 0)
      index += size;
    return std::clamp(index, low, high);
  };
  if (step > 0) {
    start = clampIndex(start, 0, size);
    end = clampIndex(end, 0, size);
    return end > start ? llvm::divideCeil(end - start, step) : 0;
  }
  start = clampIndex(start, 0, size - 1);
  end = clampIndex(end, -1, size - 1);
  return start > end ? llvm::divideCeil(start - end, -step) : 0;
}

LogicalResult ONNXSliceOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getData());
  if (!type)
    return unranked(elementTypeOf(getData()), types);
  std::optional<SmallVector<int64_t>> starts = getConstantInts(getStarts());
  std::optional<SmallVector<int64_t>> ends = getConstantInts(getEnds());
  std::optional<SmallVector<int64_t>> axes;
  if (isNone(getAxes())) {
    axes.emplace();
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes->push_back(d);
  } else {
    axes = getConstantInts(getAxes());
  }
  std::optional<SmallVector<int64_t>> steps =
      isNone(getSteps()) ? std::nullopt : getConstantInts(getSteps());
  SmallVector<int64_t> shape(type.getShape());
  if (!axes) {
    // Which dims are sliced is known only at run time.
    types.push_back(tensorOf(SmallVector<int64_t>(type.getRank(), kDynamic),
                             type.getElementType()));
    return success();
  }
  if (starts && ends) {
    if (isNone(getAxes()))
      axes->resize(starts->size());
    if (starts->size() != axes->size() || ends->size() != axes->size() ||
        (steps && steps->size() != axes->size()))
      return emitOpError("starts, ends, axes and steps differ in length");
  }
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(*this, *axes, type.getRank());
  if (failed(normalized))
    return failure();
  bool stepsKnown = isNone(getSteps()) || steps;
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    int64_t size = type.getDimSize(axis);
    if (!starts || !ends || !stepsKnown || ShapedType::isDynamic(size)) {
      shape[axis] = kDynamic;
      continue;
    }
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0)
      return emitOpError("steps must be non-zero");
    shape[axis] = sliceExtent((*starts)[i], (*ends)[i], step, size);
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult ONNXGatherOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto data = getRankedType(getData()), indices = getRankedType(getIndices());
  if (!data || !indices)
    return unranked(elementTypeOf(getData()), types);
  if (data.getRank() == 0)
    return emitOpError("data must have rank >= 1");
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), data.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  types.push_back(tensorOf(shape, data.getElementType()));
  return success();
}

LogicalResult ONNXShapeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto type = getRankedType(getData());
  if (!type) {
    types.push_back(tensorOf({kDynamic}, i64));
    return success();
  }
  int64_t rank = type.getRank();
  auto clampToRank = [&](int64_t index) {
    return std::clamp(index < 0 ? index + rank : index, int64_t(0), rank);
  };
  int64_t start = clampToRank(getStart());
  int64_t end = getEnd() ? clampToRank(*getEnd()) : rank;
  types.push_back(tensorOf({std::max<int64_t>(end - start, 0)}, i64));
  return success();
}

LogicalResult ONNXUnsqueezeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getData());
  std::optional<SmallVector<int64_t>> axes = getConstantInts(getAxes());
  if (!type || !axes)
    return unranked(elementTypeOf(getData()), types);
  int64_t rank = type.getRank() + axes->size();
  if (failed(checkRank(*this, rank)))
    return failure();
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(*this, *axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  auto next = type.getShape().begin();
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*normalized, d) ? 1 : *next++);
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult ONNXSqueezeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getData());
  if (!type)
    return unranked(elementTypeOf(getData()), types);
  std::optional<SmallVector<int64_t>> axes;
  if (!isNone(getAxes())) {
    axes = getConstantInts(getAxes());
    if (!axes)
      return unranked(type.getElementType(), types);
  }
  SmallVector<int64_t> shape;
  if (!axes) {
    // Without axes, every unit dim goes; a dynamic one may or may not be 1.
    for (int64_t size : type.getShape()) {
      if (ShapedType::isDynamic(size))
        return unranked(type.getElementType(), types);
      if (size != 1)
        shape.push_back(size);
    }
    types.push_back(tensorOf(shape, type.getElementType()));
    return success();
  }
  FailureOr<SmallVector<int64_t>> normalized =
      normalizeAxes(*this, *axes, type.getRank());
  if (failed(normalized))
    return failure();
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t size = type.getDimSize(d);
    if (!llvm::is_contained(*normalized, d)) {
      shape.push_back(size);
      continue;
    }
    if (!ShapedType::isDynamic(size) && size != 1)
      return emitOpError() << "cannot squeeze dimension " << d << " of size "
                           << size;
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

LogicalResult ONNXExpandOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getInput());
  Type elementType = elementTypeOf(getInput());
  std::optional<SmallVector<int64_t>> target = getConstantInts(getShape());
  if (!type)
    return unranked(elementType, types);
  if (!target) {
    auto shapeType = getRankedType(getShape());
    if (!shapeType || ShapedType::isDynamic(shapeType.getDimSize(0)))
      return unranked(elementType, types);
    int64_t rank = std::max(type.getRank(), shapeType.getDimSize(0));
    if (failed(checkRank(*this, rank)))
      return failure();
    types.push_back(
        tensorOf(SmallVector<int64_t>(rank, kDynamic), elementType));
    return success();
  }
  if (failed(checkRank(*this, target->size())))
    return failure();
  if (llvm::any_of(*target, [](int64_t d) { return d < 0; }))
    return emitOpError("shape entries must be non-negative");
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(type.getShape(), *target, shape))
    return emitOpError() << "cannot expand " << type << " to the shape ["
                         << llvm::make_range(target->begin(), target->end())
                         << "]";
  types.push_back(tensorOf(shape, elementType));
  return success();
}

LogicalResult ONNXPadOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getData());
  if (!type)
    return unranked(elementTypeOf(getData()), types);
  std::optional<SmallVector<int64_t>> pads = getConstantInts(getPads());
  if (!pads) {
    types.push_back(tensorOf(SmallVector<int64_t>(type.getRank(), kDynamic),
                             type.getElementType()));
    return success();
  }
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(pads->size()) != 2 * rank)
    return emitOpError() << "pads has " << pads->size() << " values for rank "
                         << rank;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (ShapedType::isDynamic(size)) {
      shape.push_back(kDynamic);
      continue;
    }
    int64_t padded = size + (*pads)[d] + (*pads)[d + rank];
    if (padded < 0)
      return emitOpError() << "pads remove more than dimension " << d
                           << " holds";
    shape.push_back(padded);
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}

/// The float values of a constant operand (Resize scales).
static std::optional<SmallVector<double>> getConstantFloats(Value value) {
  DenseFPElementsAttr attr;
  if (isNone(value) || !matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &v : attr.getValues<APFloat>())
    values.push_back(v.convertToDouble());
  return values;
}

LogicalResult ONNXResizeOp::inferResultTypes(SmallVectorImpl<Type> &types) {
  auto type = getRankedType(getX());
  if (!type)
    return unranked(elementTypeOf(getX()), types);
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(rank, kDynamic);
  std::optional<SmallVector<int64_t>> sizes =
      isNone(getSizes()) ? std::nullopt : getConstantInts(getSizes());
  std::optional<SmallVector<double>> scales = getConstantFloats(getScales());
  if (sizes && !sizes->empty()) {
    if (static_cast<int64_t>(sizes->size()) != rank)
      return emitOpError() << "sizes has " << sizes->size()
                           << " values for rank " << rank;
    if (llvm::any_of(*sizes, [](int64_t d) { return d < 0; }))
      return emitOpError("sizes must be non-negative");
    shape.assign(sizes->begin(), sizes->end());
  } else if (scales && !scales->empty()) {
    if (static_cast<int64_t>(scales->size()) != rank)
      return emitOpError() << "scales has " << scales->size()
                           << " values for rank " << rank;
    for (int64_t d = 0; d < rank; ++d) {
      double scaled = std::floor(type.getDimSize(d) * (*scales)[d]);
      if (!(scaled >= 0 && scaled < 9.0e18))
        return emitOpError() << "scale " << (*scales)[d] << " of dimension "
                             << d << " gives no valid size";
      if (!ShapedType::isDynamic(type.getDimSize(d)))
        shape[d] = static_cast<int64_t>(scaled);
    }
  }
  types.push_back(tensorOf(shape, type.getElementType()));
  return success();
}
