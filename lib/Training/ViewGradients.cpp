//===- ViewGradients.cpp - gradients of views and data movement ----------===//
//
// Reshapes, transposes, concatenation, slicing, padding, gathers, resizes:
// the gradient moves dY back to where the operand's elements were.
//
//===----------------------------------------------------------------------===//
#include "GradientRules.h"

#include <numeric>

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/ResizeSampling.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace vram::gradient_rules;

namespace vram {

//===----------------------------------------------------------------------===//
// Views and data movement
//===----------------------------------------------------------------------===//

/// Ops that only reinterpret the shape: the gradient is the result gradient
/// with the operand's shape.
template <typename OpT>
static Gradients reshapeBack(OpT op, IRBuilding &ir, ValueRange dY) {
  SmallVector<Value> grads(op->getNumOperands());
  grads[0] = ir.reshape(dY[0], shapeOf(op->getOperand(0)));
  return grads;
}

static Gradients gradientOf(ONNXIdentityOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{dY[0]};
}
static Gradients gradientOf(ONNXFlattenOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
static Gradients gradientOf(ONNXReshapeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
static Gradients gradientOf(ONNXSqueezeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
static Gradients gradientOf(ONNXUnsqueezeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}

static Gradients gradientOf(ONNXTransposeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  int64_t rank = rankOf(op.getData());
  SmallVector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (op.getPerm())
    perm = intsOr(op.getPerm(), rank, 0);
  SmallVector<int64_t> inverse(rank);
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return SmallVector<Value>{ir.transpose(dY[0], inverse)};
}

static Gradients gradientOf(ONNXExpandOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.sumTo(dY[0], op.getInput().getType()), Value()};
}

static Gradients gradientOf(ONNXConcatOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  int64_t rank = rankOf(op.getConcatResult());
  int64_t axis = normalizeAxis(op.getAxis(), rank);
  SmallVector<Value> grads(op->getNumOperands());
  int64_t start = 0;
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = shapeOf(input)[axis];
    if (wanted[i])
      grads[i] = ir.slice(dY[0], {start}, {start + size}, {axis});
    start += size;
  }
  return grads;
}

static Gradients gradientOf(ONNXSplitOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(op.getInput()));
  // A part nothing depends on contributes zeros to the concatenation.
  SmallVector<Value> parts;
  for (auto [result, grad] : llvm::zip(op.getOutputs(), dY))
    parts.push_back(grad ? grad
                         : ir.zeros(cast<RankedTensorType>(result.getType())));
  return SmallVector<Value>{ir.concat(parts, axis, op.getInput().getType()),
                            Value()};
}

static Gradients gradientOf(ONNXSliceOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> shape = shapeOf(op.getData());
  int64_t rank = shape.size();
  auto starts = getConstantInts(op.getStarts());
  auto ends = getConstantInts(op.getEnds());
  std::optional<SmallVector<int64_t>> axes =
      isa<NoneType>(op.getAxes().getType()) ? std::nullopt
                                            : getConstantInts(op.getAxes());
  std::optional<SmallVector<int64_t>> steps =
      isa<NoneType>(op.getSteps().getType()) ? std::nullopt
                                             : getConstantInts(op.getSteps());
  if (!starts || !ends || (!isa<NoneType>(op.getAxes().getType()) && !axes) ||
      (!isa<NoneType>(op.getSteps().getType()) && !steps))
    return op.emitOpError("gradient needs constant starts, ends, axes and "
                          "steps");
  // The gradient is the result gradient put back at the positions the
  // slice read: strided axes scatter each row to its position (into zeros
  // as long as data's axis), the others are padded back to data's shape.
  auto dataType = cast<RankedTensorType>(op.getData().getType());
  SmallVector<int64_t> resultShape = shapeOf(op.getOutput());
  SmallVector<int64_t> pads(2 * rank, 0);
  Value grad = dY[0];
  for (auto [i, start] : llvm::enumerate(*starts)) {
    int64_t axis = axes ? normalizeAxis((*axes)[i], rank) : i;
    int64_t step = steps ? (*steps)[i] : 1;
    int64_t dim = shape[axis];
    int64_t size = resultShape[axis];
    int64_t begin = start < 0 ? start + dim : start;
    begin = step > 0 ? std::clamp<int64_t>(begin, 0, dim)
                     : std::clamp<int64_t>(begin, -1, dim - 1);
    if (step == 1) {
      pads[axis] = begin;
      pads[rank + axis] = dim - begin - size;
      continue;
    }
    // The rows' positions are a constant of as many elements.
    if (size > IRBuilding::kMaxListedElements)
      return op.emitOpError("gradient of a strided slice of ")
             << size << " rows along axis " << axis
             << " needs a constant of that many positions; the dimensions "
                "are too large to build the training step";
    SmallVector<int64_t> positions, rowShape(rank, 1);
    for (int64_t row = 0; row < size; ++row)
      positions.push_back(begin + row * step);
    rowShape[axis] = size;
    SmallVector<int64_t> gradShape = shapeOf(grad);
    SmallVector<int64_t> scatteredShape(gradShape);
    scatteredShape[axis] = dim;
    Value rows = ir.expand(ir.int64s(rowShape, positions), gradShape);
    Value zeros = ir.zeros(
        RankedTensorType::get(scatteredShape, dataType.getElementType()));
    grad = ir.scatterAdd(zeros, rows, grad, axis);
  }
  SmallVector<Value> grads(op->getNumOperands());
  grads[0] = llvm::any_of(pads, [](int64_t p) { return p != 0; })
                 ? ir.pad(grad, pads, dataType)
                 : grad;
  return grads;
}

static Gradients gradientOf(ONNXPadOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  auto pads = getConstantInts(op.getPads());
  if (op.getMode() != "constant" || !pads ||
      llvm::any_of(*pads, [](int64_t p) { return p < 0; }))
    return op.emitOpError("gradient is supported for constant-mode Pad with "
                          "constant, non-negative pads only");
  SmallVector<int64_t> shape = shapeOf(op.getData());
  int64_t rank = shape.size();
  SmallVector<int64_t> starts, ends, axes;
  for (int64_t axis = 0; axis < rank; ++axis) {
    starts.push_back((*pads)[axis]);
    ends.push_back((*pads)[axis] + shape[axis]);
    axes.push_back(axis);
  }
  SmallVector<Value> grads(op->getNumOperands());
  grads[0] = ir.slice(dY[0], starts, ends, axes);
  return grads;
}

static FailureOr<SmallVector<Value>> saveFor(ONNXGatherOp op, OpBuilder &,
                                             ArrayRef<bool>) {
  return SmallVector<Value>{op.getIndices()};
}

/// Scatter-adds the result gradient into zeros of the data's shape: indices
/// may repeat, and each occurrence contributes.
static Gradients gradientOf(ONNXGatherOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> shape = shapeOf(op.getData());
  int64_t rank = shape.size();
  int64_t axis = normalizeAxis(op.getAxis(), rank);
  int64_t count = cast<RankedTensorType>(saved[0].getType()).getNumElements();
  // ScatterElements wants indices and updates of one shape: flatten the
  // indices into the gathered axis and broadcast them over the others.
  SmallVector<int64_t> updateShape(shape);
  updateShape[axis] = count;
  SmallVector<int64_t> indexShape(rank, 1);
  indexShape[axis] = count;
  Value indices = ir.expand(ir.reshape(saved[0], indexShape), updateShape);
  Value updates = ir.reshape(dY[0], updateShape);
  auto dataType = cast<RankedTensorType>(op.getData().getType());
  return SmallVector<Value>{
      ir.scatterAdd(ir.zeros(dataType), indices, updates, axis), Value()};
}

static FailureOr<SmallVector<Value>> saveFor(ONNXScatterNDOp op, OpBuilder &,
                                             ArrayRef<bool>) {
  return SmallVector<Value>{op.getIndices()};
}

/// With reduction none, each update lands on one slice of the output and
/// replaces what data had there: updates get the output gradient gathered
/// from their slices (the index tuples flattened to rows of data's first k
/// dims), and data gets the output gradient with those slices zeroed.
static Gradients gradientOf(ONNXScatterNDOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY,
                            ArrayRef<bool> wanted) {
  if (op.getReduction() != "none")
    return op.emitOpError("gradient is supported for reduction none only");
  SmallVector<int64_t> dataShape = shapeOf(op.getData());
  SmallVector<int64_t> indicesShape = shapeOf(saved[0]);
  int64_t k = indicesShape.back();
  auto updatesType = cast<RankedTensorType>(op.getUpdates().getType());
  SmallVector<Value> grads(3);
  if (wanted[0])
    grads[0] = ir.scatterND(dY[0], saved[0], ir.zeros(updatesType));
  if (!wanted[2])
    return grads;
  // Row of each tuple: sum_j (i_j mod-wrapped) * prod(dataShape[j+1:k]).
  int64_t tuples = 1, rows = 1, rowSize = 1;
  for (int64_t size : ArrayRef<int64_t>(indicesShape).drop_back())
    tuples *= size;
  SmallVector<int64_t> extents(dataShape.begin(), dataShape.begin() + k);
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 1; j >= 0; --j) {
    strides[j] = rows;
    rows *= extents[j];
  }
  for (int64_t size : ArrayRef<int64_t>(dataShape).drop_front(k))
    rowSize *= size;
  Type indexType = getElementTypeOrSelf(saved[0].getType());
  Value tupleRows = ir.reshape(saved[0], {tuples, k});
  Value shifted = ir.add(tupleRows, ir.int64s({k}, extents));
  Value negative = ir.greater(ir.scalar(indexType, 0), tupleRows);
  Value wrapped = ir.where(negative, shifted, tupleRows);
  Value rowIndices = ir.reduceSum(ir.mul(wrapped, ir.int64s({k}, strides)), {1},
                                  /*keepdims=*/false);
  Value gathered = ir.gather(ir.reshape(dY[0], {rows, rowSize}), rowIndices, 0);
  grads[2] = ir.reshape(gathered, updatesType.getShape());
  return grads;
}

/// The elements of a constant float operand; empty for none.
static std::optional<SmallVector<double>> getConstantFloats(Value value) {
  if (isa<NoneType>(value.getType()))
    return SmallVector<double>{};
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  return getFloatValues(attr);
}

static Gradients gradientOf(ONNXResizeOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  // Resize is separable and linear in X: along each resized dimension,
  // Y = R X with R [out, in] holding the taps' weights (nearest: a single 1
  // per row). So dX = R^T dY along each dimension in turn: a MatMul with a
  // small constant, last dimension first (dY R), the others as
  // R^T [in, out] times dY viewed as [..., out, rest].
  auto xType = cast<RankedTensorType>(op.getX().getType());
  auto yType = cast<RankedTensorType>(op.getY().getType());
  std::optional<SmallVector<double>> scales = getConstantFloats(op.getScales());
  std::optional<SmallVector<double>> roi = getConstantFloats(op.getRoi());
  if (!scales || !roi)
    return op.emitOpError("gradient needs constant scales and roi");
  FailureOr<ResizeSampling> sampling =
      getResizeSampling(op, xType, yType, *scales, *roi,
                        [&] { return op.emitOpError("gradient: "); });
  if (failed(sampling))
    return failure();
  if (sampling->extrapolates)
    return op.emitOpError("gradient of tf_crop_and_resize with "
                          "extrapolation is not supported");
  Type elementType = elementTypeOf(dY[0]);
  SmallVector<int64_t> shape(yType.getShape());
  int64_t rank = shape.size();
  Value grad = dY[0];
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (sampling->identity[dim])
      continue;
    int64_t in = xType.getDimSize(dim), out = shape[dim];
    ResizeTaps taps = getResizeTaps(op, *sampling, dim, in);
    bool last = dim == rank - 1;
    // R [out, in] for the last dimension, R^T [in, out] for the others.
    SmallVector<double> matrix(in * out, 0.0);
    for (auto [indices, weights] : llvm::zip(taps.indices, taps.weights))
      for (int64_t o = 0; o < out; ++o)
        matrix[last ? o * in + indices[o] : indices[o] * out + o] += weights[o];
    if (last) {
      grad = ir.matmul(
          grad,
          ir.floats(RankedTensorType::get({out, in}, elementType), matrix));
    } else {
      SmallVector<int64_t> view(shape.begin(), shape.begin() + dim);
      int64_t rest = 1;
      for (int64_t size : ArrayRef(shape).drop_front(dim + 1))
        rest *= size;
      view.append({out, rest});
      grad = ir.matmul(
          ir.floats(RankedTensorType::get({in, out}, elementType), matrix),
          ir.reshape(grad, view));
    }
    shape[dim] = in;
    grad = ir.reshape(grad, shape);
  }
  SmallVector<Value> grads(op->getNumOperands());
  grads[0] = grad;
  return grads;
}

void gradient_rules::attachViewGradients(MLIRContext *context) {
  attachGradientModels<ONNXIdentityOp, ONNXFlattenOp, ONNXReshapeOp,
                       ONNXSqueezeOp, ONNXUnsqueezeOp, ONNXTransposeOp,
                       ONNXExpandOp, ONNXConcatOp, ONNXSplitOp, ONNXSliceOp,
                       ONNXPadOp, ONNXGatherOp, ONNXScatterNDOp, ONNXResizeOp>(
      context);
}

} // namespace vram
