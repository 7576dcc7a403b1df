//===- Gradients.cpp - reverse-mode rules of the onnx ops -----------------===//
//
// Every rule builds its gradient from real onnx ops, so the backward pass is
// analysed, planned and lowered like the forward pass. Each rule keeps the
// least the math needs (see docs/training.md for the list).
//
//===----------------------------------------------------------------------===//

#include "vram/Training/GradientOpInterface.h"
#include "vram/Training/IRBuilding.h"

#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;

#include "vram/Training/GradientOpInterface.cpp.inc"

namespace vram {
namespace {

using Gradients = FailureOr<SmallVector<Value>>;

SmallVector<int64_t> shapeOf(Value value) {
  return llvm::to_vector(cast<RankedTensorType>(value.getType()).getShape());
}

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// The value of a constant scalar float operand, if it is one.
std::optional<double> getConstantFloat(Value value) {
  DenseFPElementsAttr attr;
  if (!value || isa<NoneType>(value.getType()) ||
      !matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> intsOr(std::optional<ArrayAttr> attr, size_t size,
                            int64_t fill) {
  if (!attr)
    return SmallVector<int64_t>(size, fill);
  return llvm::to_vector(llvm::map_range(*attr, [](Attribute a) {
    return cast<IntegerAttr>(a).getInt();
  }));
}

//===----------------------------------------------------------------------===//
// Default: nothing to save.
//===----------------------------------------------------------------------===//

template <typename OpT>
FailureOr<SmallVector<Value>> saveFor(OpT, OpBuilder &, ArrayRef<bool>) {
  return SmallVector<Value>{};
}

//===----------------------------------------------------------------------===//
// Views and data movement
//===----------------------------------------------------------------------===//

/// Ops that only reinterpret the shape: the gradient is the result gradient
/// with the operand's shape.
template <typename OpT>
Gradients reshapeBack(OpT op, IRBuilding &ir, ValueRange dY) {
  SmallVector<Value> grads(op->getNumOperands());
  grads[0] = ir.reshape(dY[0], shapeOf(op->getOperand(0)));
  return grads;
}

Gradients gradientOf(ONNXIdentityOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{dY[0]};
}
Gradients gradientOf(ONNXFlattenOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
Gradients gradientOf(ONNXReshapeOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
Gradients gradientOf(ONNXSqueezeOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}
Gradients gradientOf(ONNXUnsqueezeOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return reshapeBack(op, ir, dY);
}

Gradients gradientOf(ONNXTransposeOp op, IRBuilding &ir, ValueRange,
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

Gradients gradientOf(ONNXExpandOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.sumTo(dY[0], op.getInput().getType()),
                            Value()};
}

Gradients gradientOf(ONNXConcatOp op, IRBuilding &ir, ValueRange,
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

Gradients gradientOf(ONNXSplitOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(op.getInput()));
  // A part nothing depends on contributes zeros to the concatenation.
  SmallVector<Value> parts;
  for (auto [result, grad] : llvm::zip(op.getOutputs(), dY))
    parts.push_back(grad ? grad
                         : ir.zeros(cast<RankedTensorType>(result.getType())));
  return SmallVector<Value>{
      ir.concat(parts, axis, op.getInput().getType()), Value()};
}

Gradients gradientOf(ONNXSliceOp op, IRBuilding &ir, ValueRange,
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
  if (!starts || !ends ||
      (!isa<NoneType>(op.getAxes().getType()) && !axes) ||
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

Gradients gradientOf(ONNXPadOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool>) {
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

FailureOr<SmallVector<Value>> saveFor(ONNXGatherOp op, OpBuilder &,
                                      ArrayRef<bool>) {
  return SmallVector<Value>{op.getIndices()};
}

/// Scatter-adds the result gradient into zeros of the data's shape: indices
/// may repeat, and each occurrence contributes.
Gradients gradientOf(ONNXGatherOp op, IRBuilding &ir, ValueRange saved,
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

FailureOr<SmallVector<Value>> saveFor(ONNXScatterNDOp op, OpBuilder &,
                                      ArrayRef<bool>) {
  return SmallVector<Value>{op.getIndices()};
}

/// With reduction none, each update lands on one slice of the output and
/// replaces what data had there: updates get the output gradient gathered
/// from their slices (the index tuples flattened to rows of data's first k
/// dims), and data gets the output gradient with those slices zeroed.
Gradients gradientOf(ONNXScatterNDOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool> wanted) {
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

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (with broadcasting: gradients are summed back to
// the operand shapes)
//===----------------------------------------------------------------------===//

Gradients gradientOf(ONNXAddOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(dY[0], op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(dY[0], op.getB().getType());
  return grads;
}

Gradients gradientOf(ONNXSubOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(dY[0], op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.neg(dY[0]), op.getB().getType());
  return grads;
}

/// What a bilinear op (Mul, MatMul, Gemm, Conv: Y = f(A, B)) keeps: the
/// gradient of A reads B and that of B reads A, so only the operands a
/// wanted gradient reads are saved (a frozen weight's input is not kept).
SmallVector<Value> saveForBilinear(Value a, Value b, ArrayRef<bool> wanted) {
  SmallVector<Value> saved;
  if (wanted[0])
    saved.push_back(b);
  if (wanted[1])
    saved.push_back(a);
  return saved;
}

/// Each operand's gradient reads every other operand.
FailureOr<SmallVector<Value>> saveFor(ONNXEinsumOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  SmallVector<Value> saved;
  for (auto [j, input] : llvm::enumerate(op.getInputs()))
    if (llvm::any_of(llvm::seq<size_t>(0, wanted.size()),
                     [&](size_t i) { return i != j && wanted[i]; }))
      saved.push_back(input);
  return saved;
}

/// The gradient of operand i is the Einsum of the result gradient with the
/// other operands onto operand i's labels; a label only operand i has (it
/// was summed away) is broadcast back. Repeated labels within an operand
/// (diagonals) and broadcast ellipsis dims are not supported.
Gradients gradientOf(ONNXEinsumOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  llvm::Expected<EinsumSpec> spec = op.getSpec();
  if (!spec)
    return op.emitOpError() << llvm::toString(spec.takeError());
  SmallVector<Value> grads(op->getNumOperands());
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    if (!wanted[i])
      continue;
    const std::string &labels = spec->inputs[i];
    SmallVector<int64_t> shape = shapeOf(input);
    SmallVector<std::string> terms{spec->output};
    SmallVector<Value> operands{dY[0]};
    for (auto [j, other] : llvm::enumerate(op.getInputs()))
      if (j != i) {
        terms.push_back(spec->inputs[j]);
        operands.push_back(other);
      }
    std::string kept;
    SmallVector<int64_t> keptShape, unsqueezed;
    for (auto [label, size] : llvm::zip(labels, shape)) {
      if (llvm::count(labels, label) != 1 || size != spec->extents.at(label))
        return op.emitOpError("gradient of an Einsum with a repeated label "
                              "in an operand or a broadcast dim is not "
                              "supported");
      bool elsewhere = llvm::any_of(
          terms, [&](const std::string &t) { return t.find(label) != t.npos; });
      unsqueezed.push_back(elsewhere ? size : 1);
      if (!elsewhere)
        continue;
      kept.push_back(label);
      keptShape.push_back(size);
    }
    auto type = cast<RankedTensorType>(input.getType());
    Value grad = ir.einsum(llvm::join(terms, ",") + "->" + kept, operands,
                           type.clone(keptShape));
    if (kept.size() != labels.size())
      grad = ir.expand(ir.reshape(grad, unsqueezed), shape);
    grads[i] = grad;
  }
  return grads;
}

FailureOr<SmallVector<Value>> saveFor(ONNXMulOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

Gradients gradientOf(ONNXMulOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(ir.mul(dY[0], op.getB()), op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.mul(dY[0], op.getA()), op.getB().getType());
  return grads;
}

FailureOr<SmallVector<Value>> saveFor(ONNXDivOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  SmallVector<Value> saved{op.getB()};
  if (wanted[1])
    saved.push_back(op.getC());
  return saved;
}

Gradients gradientOf(ONNXDivOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  Value dA = ir.div(dY[0], op.getB());
  if (wanted[0])
    grads[0] = ir.sumTo(dA, op.getA().getType());
  // d(A/B)/dB = -A/B^2 = -C/B, so dB = -(dY/B) C: reuses the result
  // instead of keeping A.
  if (wanted[1])
    grads[1] = ir.sumTo(ir.neg(ir.mul(dA, op.getC())), op.getB().getType());
  return grads;
}

FailureOr<SmallVector<Value>> saveFor(ONNXPowOp op, OpBuilder &,
                                      ArrayRef<bool>) {
  return SmallVector<Value>{op.getX()};
}

Gradients gradientOf(ONNXPowOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  if (wanted[1] || !matchPattern(op.getY(), m_Constant()))
    return op.emitOpError("gradient is supported for a constant exponent "
                          "only");
  Type elementType = getElementTypeOrSelf(op.getX().getType());
  Value exponent = ir.cast(op.getY(), elementType);
  Value lowered =
      ir.pow(op.getX(), ir.sub(exponent, ir.scalar(elementType, 1.0)));
  return SmallVector<Value>{
      ir.sumTo(ir.mul(dY[0], ir.mul(exponent, lowered)), op.getX().getType()),
      Value()};
}

Gradients gradientOf(ONNXNegOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool>) {
  return SmallVector<Value>{ir.neg(dY[0])};
}

FailureOr<SmallVector<Value>> saveFor(ONNXWhereOp op, OpBuilder &,
                                      ArrayRef<bool>) {
  return SmallVector<Value>{op.getCondition()};
}

Gradients gradientOf(ONNXWhereOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool> wanted) {
  SmallVector<Value> grads(3);
  Type elementType = getElementTypeOrSelf(dY[0].getType());
  Value zero = ir.scalar(elementType, 0.0);
  if (wanted[1])
    grads[1] = ir.sumTo(ir.where(saved[0], dY[0], zero), op.getX().getType());
  if (wanted[2])
    grads[2] = ir.sumTo(ir.where(saved[0], zero, dY[0]), op.getY().getType());
  return grads;
}

Gradients gradientOf(ONNXCastOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool>) {
  Type inputElement = getElementTypeOrSelf(op.getInput().getType());
  if (!isa<FloatType>(inputElement))
    return SmallVector<Value>{Value()};
  return SmallVector<Value>{ir.cast(dY[0], inputElement)};
}

//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

/// Keeps the result: the smaller choice for ops whose derivative is a
/// function of it (Relu: PyTorch keeps the output too).
#define VRAM_SAVES_RESULT(OpT)                                                 \
  FailureOr<SmallVector<Value>> saveFor(OpT op, OpBuilder &, ArrayRef<bool>) { \
    return SmallVector<Value>{op->getResult(0)};                               \
  }
/// Keeps the operand.
#define VRAM_SAVES_INPUT(OpT)                                                  \
  FailureOr<SmallVector<Value>> saveFor(OpT op, OpBuilder &, ArrayRef<bool>) { \
    return SmallVector<Value>{op->getOperand(0)};                              \
  }
VRAM_SAVES_RESULT(ONNXReluOp)
VRAM_SAVES_RESULT(ONNXSigmoidOp)
VRAM_SAVES_RESULT(ONNXTanhOp)
VRAM_SAVES_RESULT(ONNXExpOp)
VRAM_SAVES_RESULT(ONNXSqrtOp)
VRAM_SAVES_RESULT(ONNXReciprocalOp)
VRAM_SAVES_RESULT(ONNXSoftmaxOp)
VRAM_SAVES_RESULT(ONNXLogSoftmaxOp)
VRAM_SAVES_INPUT(ONNXLeakyReluOp)
VRAM_SAVES_INPUT(ONNXLogOp)
VRAM_SAVES_INPUT(ONNXErfOp)
VRAM_SAVES_INPUT(ONNXGeluOp)
VRAM_SAVES_INPUT(ONNXSwishOp)
VRAM_SAVES_INPUT(ONNXHardSigmoidOp)
VRAM_SAVES_INPUT(ONNXHardSwishOp)
#undef VRAM_SAVES_RESULT
#undef VRAM_SAVES_INPUT

Type elementTypeOf(Value value) { return getElementTypeOrSelf(value.getType()); }

Gradients gradientOf(ONNXReluOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  Value zero = ir.scalar(elementTypeOf(saved[0]), 0.0);
  return SmallVector<Value>{
      ir.where(ir.greater(saved[0], zero), dY[0], zero)};
}

Gradients gradientOf(ONNXLeakyReluOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  Type type = elementTypeOf(saved[0]);
  Value negative = ir.mul(dY[0], ir.scalar(type, op.getAlpha().convertToDouble()));
  return SmallVector<Value>{ir.where(
      ir.greater(saved[0], ir.scalar(type, 0.0)), dY[0], negative)};
}

Gradients gradientOf(ONNXSigmoidOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // s' = s (1 - s)
  Value one = ir.scalar(elementTypeOf(saved[0]), 1.0);
  return SmallVector<Value>{
      ir.mul(dY[0], ir.mul(saved[0], ir.sub(one, saved[0])))};
}

Gradients gradientOf(ONNXTanhOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // tanh' = 1 - tanh^2
  Value one = ir.scalar(elementTypeOf(saved[0]), 1.0);
  return SmallVector<Value>{
      ir.mul(dY[0], ir.sub(one, ir.mul(saved[0], saved[0])))};
}

Gradients gradientOf(ONNXExpOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.mul(dY[0], saved[0])};
}

Gradients gradientOf(ONNXSqrtOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // sqrt(x)' = 1 / (2 sqrt(x))
  Value two = ir.scalar(elementTypeOf(saved[0]), 2.0);
  return SmallVector<Value>{ir.div(dY[0], ir.mul(saved[0], two))};
}

Gradients gradientOf(ONNXReciprocalOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // (1/x)' = -1/x^2 = -y^2
  return SmallVector<Value>{ir.neg(ir.mul(dY[0], ir.mul(saved[0], saved[0])))};
}

Gradients gradientOf(ONNXLogOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.div(dY[0], saved[0])};
}

Gradients gradientOf(ONNXErfOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // erf'(x) = 2/sqrt(pi) exp(-x^2)
  Type type = elementTypeOf(saved[0]);
  Value exp = ir.exp(ir.neg(ir.mul(saved[0], saved[0])));
  return SmallVector<Value>{
      ir.mul(dY[0], ir.mul(exp, ir.scalar(type, 2.0 / std::sqrt(M_PI))))};
}

Gradients gradientOf(ONNXSwishOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // s = sigmoid(a x): (x s)' = s + a x s (1 - s); s is recomputed from the
  // saved input, as PyTorch's SiLU backward does.
  Value x = saved[0];
  Type type = elementTypeOf(x);
  Value ax = ir.mul(x, ir.scalar(type, op.getAlpha().convertToDouble()));
  Value s = ir.sigmoid(ax);
  Value derivative =
      ir.add(s, ir.mul(ax, ir.mul(s, ir.sub(ir.scalar(type, 1.0), s))));
  return SmallVector<Value>{ir.mul(dY[0], derivative)};
}

Gradients gradientOf(ONNXGeluOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  Value x = saved[0];
  Type type = elementTypeOf(x);
  auto c = [&](double v) { return ir.scalar(type, v); };
  Value derivative;
  if (op.getApproximate() == "tanh") {
    // u = k (x + 0.044715 x^3), t = tanh(u):
    // gelu' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 * 0.044715 x^2)
    double k = std::sqrt(2.0 / M_PI);
    Value x2 = ir.mul(x, x);
    Value x3 = ir.mul(x2, x);
    Value inner = ir.add(x, ir.mul(c(0.044715), x3));
    Value u = ir.mul(c(k), inner);
    Value t = ir.tanh(u);
    Value scaledX2 = ir.mul(c(3 * 0.044715), x2);
    Value slope = ir.add(c(1.0), scaledX2);
    Value du = ir.mul(c(k), slope);
    Value onePlusT = ir.add(c(1.0), t);
    Value left = ir.mul(c(0.5), onePlusT);
    Value t2 = ir.mul(t, t);
    Value oneMinusT2 = ir.sub(c(1.0), t2);
    Value sech2 = ir.mul(oneMinusT2, du);
    Value halfX = ir.mul(c(0.5), x);
    Value right = ir.mul(halfX, sech2);
    derivative = ir.add(left, right);
  } else {
    // gelu' = Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2))
    //         + x exp(-x^2 / 2) / sqrt(2 pi)
    Value erf = ir.erf(ir.mul(x, c(M_SQRT1_2)));
    Value onePlusErf = ir.add(c(1.0), erf);
    Value cdf = ir.mul(c(0.5), onePlusErf);
    Value pdfScale = c(1.0 / std::sqrt(2.0 * M_PI));
    Value minusHalf = c(-0.5);
    Value x2 = ir.mul(x, x);
    Value pdf = ir.mul(ir.exp(ir.mul(x2, minusHalf)), pdfScale);
    derivative = ir.add(cdf, ir.mul(x, pdf));
  }
  return SmallVector<Value>{ir.mul(dY[0], derivative)};
}

Gradients gradientOf(ONNXHardSigmoidOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // alpha where 0 < alpha x + beta < 1, else 0.
  Type type = elementTypeOf(saved[0]);
  double alpha = op.getAlpha().convertToDouble();
  Value beta = ir.scalar(type, op.getBeta().convertToDouble());
  Value v = ir.add(ir.mul(saved[0], ir.scalar(type, alpha)), beta);
  Value zero = ir.scalar(type, 0.0);
  Value scaled = ir.mul(dY[0], ir.scalar(type, alpha));
  Value inside = ir.where(ir.greater(ir.scalar(type, 1.0), v), scaled, zero);
  return SmallVector<Value>{ir.where(ir.greater(v, zero), inside, zero)};
}

Gradients gradientOf(ONNXHardSwishOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // x relu6(x + 3) / 6: 0 below -3, 1 above 3, (2x + 3) / 6 between.
  Value x = saved[0];
  Type type = elementTypeOf(x);
  auto c = [&](double v) { return ir.scalar(type, v); };
  Value six = c(6.0);
  Value three = c(3.0);
  Value shifted = ir.add(ir.add(x, x), three);
  Value middle = ir.mul(dY[0], ir.div(shifted, six));
  Value zero = c(0.0);
  Value aboveLow = ir.where(ir.greater(x, c(-3.0)), middle, zero);
  return SmallVector<Value>{ir.where(ir.greater(x, c(3.0)), dY[0], aboveLow)};
}

FailureOr<SmallVector<Value>> saveFor(ONNXClipOp op, OpBuilder &,
                                      ArrayRef<bool>) {
  return SmallVector<Value>{op.getInput()};
}

Gradients gradientOf(ONNXClipOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool> wanted) {
  if (wanted[1] || wanted[2])
    return op.emitOpError("gradient with respect to the bounds is not "
                          "supported");
  Value zero = ir.scalar(elementTypeOf(saved[0]), 0.0);
  Value grad = dY[0];
  if (!isa<NoneType>(op.getMax().getType()))
    grad = ir.where(ir.greater(op.getMax(), saved[0]), grad, zero);
  if (!isa<NoneType>(op.getMin().getType()))
    grad = ir.where(ir.greater(saved[0], op.getMin()), grad, zero);
  return SmallVector<Value>{grad, Value(), Value()};
}

Gradients gradientOf(ONNXSoftmaxOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // dX = Y (dY - sum(dY Y, axis))
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(saved[0]));
  Value dot = ir.reduceSum(ir.mul(dY[0], saved[0]), {axis}, /*keepdims=*/true);
  return SmallVector<Value>{ir.mul(saved[0], ir.sub(dY[0], dot))};
}

Gradients gradientOf(ONNXLogSoftmaxOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // dX = dY - exp(Y) sum(dY, axis)
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(saved[0]));
  Value total = ir.reduceSum(dY[0], {axis}, /*keepdims=*/true);
  return SmallVector<Value>{ir.sub(dY[0], ir.mul(ir.exp(saved[0]), total))};
}

FailureOr<SmallVector<Value>> saveFor(ONNXDropoutOp op, OpBuilder &builder,
                                      ArrayRef<bool>) {
  std::optional<double> training = getConstantFloat(op.getTrainingMode());
  if (isa<NoneType>(op.getTrainingMode().getType()) ||
      (training && *training == 0.0))
    return SmallVector<Value>{};
  // The gradient needs which elements were kept: expose the mask output.
  auto type = cast<RankedTensorType>(op.getData().getType());
  if (isa<NoneType>(op.getMask().getType()))
    op.getMask().setType(type.clone(builder.getI1Type()));
  return SmallVector<Value>{op.getMask()};
}

Gradients gradientOf(ONNXDropoutOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  SmallVector<Value> grads(3);
  if (saved.empty()) {
    // Inference mode: the identity.
    grads[0] = dY[0];
    return grads;
  }
  double ratio = 0.5;
  if (!isa<NoneType>(op.getRatio().getType())) {
    std::optional<double> constant = getConstantFloat(op.getRatio());
    if (!constant)
      return op.emitOpError("gradient needs a constant ratio");
    ratio = *constant;
  }
  Type type = elementTypeOf(dY[0]);
  Value scaled = ir.mul(dY[0], ir.scalar(type, 1.0 / (1.0 - ratio)));
  grads[0] = ir.where(saved[0], scaled, ir.scalar(type, 0.0));
  return grads;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>> saveFor(ONNXGemmOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

Gradients gradientOf(ONNXGemmOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  // Y = alpha A' B' + beta C with A' = A or A^T, B' = B or B^T.
  int64_t transA = op.getTransA(), transB = op.getTransB();
  double alpha = op.getAlpha().convertToDouble();
  Value a = op.getA(), b = op.getB();
  SmallVector<Value> grads(3);
  if (wanted[0]) {
    // dA' = alpha dY B'^T; dA = dA' or its transpose.
    grads[0] = transA ? ir.gemm(b, dY[0], transB, 1, alpha, a.getType())
                      : ir.gemm(dY[0], b, 0, 1 - transB, alpha, a.getType());
  }
  if (wanted[1]) {
    // dB' = alpha A'^T dY
    grads[1] = transB ? ir.gemm(dY[0], a, 1, transA, alpha, b.getType())
                      : ir.gemm(a, dY[0], 1 - transA, 0, alpha, b.getType());
  }
  if (wanted[2]) {
    Value dC = dY[0];
    double beta = op.getBeta().convertToDouble();
    if (beta != 1.0)
      dC = ir.mul(dC, ir.scalar(elementTypeOf(dC), beta));
    grads[2] = ir.sumTo(dC, op.getC().getType());
  }
  return grads;
}

FailureOr<SmallVector<Value>> saveFor(ONNXMatMulOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

Gradients gradientOf(ONNXMatMulOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool> wanted) {
  Value a = op.getA(), b = op.getB();
  if (rankOf(a) < 2 || rankOf(b) < 2)
    return op.emitOpError("gradient of MatMul with a 1-d operand is not "
                          "supported");
  auto swapLast = [&](Value value) {
    int64_t rank = rankOf(value);
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return ir.transpose(value, perm);
  };
  // Broadcast batch dimensions are summed back by sumTo.
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(ir.matmul(dY[0], swapLast(b)), a.getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.matmul(swapLast(a), dY[0]), b.getType());
  return grads;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

using Window = ConvWindow;

LogicalResult getWindow(Operation *op, ArrayRef<int64_t> kernel,
                        Window &window) {
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  if (autoPad && autoPad.getValue() != "NOTSET")
    return op->emitOpError("gradient needs explicit pads (auto_pad = "
                           "NOTSET)");
  size_t n = kernel.size();
  window.kernel.assign(kernel.begin(), kernel.end());
  auto ints = [&](StringRef name, int64_t fill, size_t size) {
    auto attr = op->getAttrOfType<ArrayAttr>(name);
    return intsOr(attr ? std::optional<ArrayAttr>(attr) : std::nullopt, size,
                  fill);
  };
  window.strides = ints("strides", 1, n);
  window.dilations = ints("dilations", 1, n);
  window.pads = ints("pads", 0, 2 * n);
  return success();
}

/// The output_padding that makes a ConvTranspose with `window` produce
/// `inputShape` from `outputShape` (both spatial): the rows a strided
/// forward window never reached.
SmallVector<int64_t> outputPadding(const Window &window,
                                   ArrayRef<int64_t> inputShape,
                                   ArrayRef<int64_t> outputShape) {
  size_t n = window.kernel.size();
  SmallVector<int64_t> padding;
  for (size_t i = 0; i < n; ++i) {
    int64_t produced = window.strides[i] * (outputShape[i] - 1) +
                       (window.kernel[i] - 1) * window.dilations[i] + 1 -
                       window.pads[i] - window.pads[n + i];
    padding.push_back(inputShape[i] - produced);
  }
  return padding;
}

FailureOr<SmallVector<Value>> saveFor(ONNXConvOp op, OpBuilder &,
                                      ArrayRef<bool> wanted) {
  // dB reads neither.
  return saveForBilinear(op.getX(), op.getW(), wanted);
}

Gradients gradientOf(ONNXConvOp op, IRBuilding &ir, ValueRange, ValueRange dY,
                     ArrayRef<bool> wanted) {
  SmallVector<int64_t> xShape = shapeOf(op.getX()), wShape = shapeOf(op.getW());
  SmallVector<int64_t> yShape = shapeOf(op.getY());
  size_t n = xShape.size() - 2;
  Window window;
  if (failed(getWindow(op, ArrayRef(wShape).drop_front(2), window)))
    return failure();
  SmallVector<Value> grads(3);
  if (wanted[0]) {
    // The transposed convolution with the same weights.
    grads[0] = ir.convTranspose(
        dY[0], op.getW(), window, op.getGroup(),
        outputPadding(window, ArrayRef(xShape).drop_front(2),
                      ArrayRef(yShape).drop_front(2)),
        op.getX().getType());
  }
  if (wanted[1]) {
    // dW[m, c, k] = sum_{n, o} dY[n, m, o] X[n, g Cg + c, o s + k d - p]
    // for m in group g: a Conv with the batch as channels, stride the
    // forward dilation and dilation the forward stride. Its input is X with
    // channels of one group as the batch, [Cg, G x N, ...] (group g's N
    // images as channel block g); its weights dY^T, [M, N, ...] (M ordered by
    // group); group = G keeps block g with the filters of group g. The
    // result is [Cg, M, k]: dW with its first two dims swapped.
    int64_t group = op.getGroup();
    int64_t batch = xShape[0], groupChannels = xShape[1] / group;
    SmallVector<int64_t> swap(xShape.size());
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[0], swap[1]);
    SmallVector<int64_t> split{batch, group, groupChannels};
    split.append(xShape.begin() + 2, xShape.end());
    SmallVector<int64_t> toChannelsFirst{2, 1, 0};
    for (size_t i = 0; i < n; ++i)
      toChannelsFirst.push_back(3 + i);
    SmallVector<int64_t> merged{groupChannels, group * batch};
    merged.append(xShape.begin() + 2, xShape.end());
    Value xT = group == 1 ? ir.transpose(op.getX(), swap)
                          : ir.reshape(ir.transpose(ir.reshape(op.getX(), split),
                                                    toChannelsFirst),
                                       merged);
    Value dYT = ir.transpose(dY[0], swap);
    Window weightWindow;
    weightWindow.kernel.assign(yShape.begin() + 2, yShape.end());
    weightWindow.strides = window.dilations;
    weightWindow.dilations = window.strides;
    weightWindow.pads = window.pads;
    SmallVector<int64_t> sliceEnds, sliceAxes;
    for (size_t i = 0; i < n; ++i) {
      // End padding so the output is exactly the kernel; rows past the last
      // window (negative padding) are sliced off the input instead.
      int64_t end = (window.kernel[i] - 1) * window.dilations[i] +
                    (yShape[2 + i] - 1) * window.strides[i] + 1 -
                    xShape[2 + i] - window.pads[i];
      weightWindow.pads[n + i] = std::max<int64_t>(end, 0);
      if (end < 0) {
        sliceEnds.push_back(xShape[2 + i] + end);
        sliceAxes.push_back(2 + i);
      }
    }
    if (!sliceAxes.empty())
      xT = ir.slice(xT, SmallVector<int64_t>(sliceAxes.size(), 0), sliceEnds,
                    sliceAxes);
    SmallVector<int64_t> gShape(wShape);
    std::swap(gShape[0], gShape[1]);
    auto gType = RankedTensorType::get(gShape, elementTypeOf(dY[0]));
    Value g = ir.conv(xT, dYT, weightWindow, group, gType);
    grads[1] = ir.transpose(g, swap);
  }
  if (wanted[2]) {
    SmallVector<int64_t> axes{0};
    for (size_t i = 0; i < n; ++i)
      axes.push_back(2 + i);
    grads[2] = ir.reduceSum(dY[0], axes, /*keepdims=*/false);
  }
  return grads;
}

/// Where each of a MaxPool's maxima came from, kept compactly: the offset
/// k in its window (kh KW + kw; int8), as PyTorch's Inductor keeps it,
/// instead of ONNX's int64 flat index into X (PyTorch eager's form):
/// 1 byte per output element instead of 8. The flat index is the window's
/// origin (the flat position of kernel offset 0, perhaps in the padding:
/// arithmetic only) plus r = kh dh W + kw; with windows no wider than a
/// dilated row (KW <= dh W), kh = r / (dh W) and k = r - kh (dh W - KW).
/// 1-d and 2-d windows of at most 127 elements, undilated along the last
/// axis (every pool current models use); others keep the int64 indices.
/// The origins are a sum of small broadcast constants, built in forward and
/// read again by backward (constants live throughout: no second copy).
class WindowOffsets {
public:
  WindowOffsets(ONNXMaxPoolOp op) {
    xShape = shapeOf(op.getX());
    yShape = shapeOf(op.getY());
    size_t spatial = xShape.size() - 2;
    SmallVector<int64_t> kernel = intsOr(op.getKernelShape(), 0, 0);
    int64_t size = 1;
    for (int64_t k : kernel)
      size *= k;
    applies = (spatial == 1 || spatial == 2) && size <= 127 &&
              kernel.size() == spatial &&
              succeeded(getWindow(op, kernel, window)) &&
              window.dilations.back() == 1 &&
              (spatial == 1 || kernel[1] <= rowSpan());
  }

  bool appliesToOp() const { return applies; }

  /// The constants whose sum is the flat index of each window's origin,
  /// shaped like Y once added: (n C + c) |image|, then per spatial axis
  /// (o stride - pad) times that axis's stride in X.
  SmallVector<Value> buildOriginTerms(IRBuilding &ir) {
    size_t rank = xShape.size(), spatial = rank - 2;
    SmallVector<int64_t> axisStride(rank, 1);
    for (size_t d = rank - 1; d > 0; --d)
      axisStride[d - 1] = axisStride[d] * xShape[d];
    SmallVector<int64_t> shape(rank, 1), values;
    shape[0] = xShape[0];
    shape[1] = xShape[1];
    for (int64_t nc = 0; nc < xShape[0] * xShape[1]; ++nc)
      values.push_back(nc * axisStride[1]);
    SmallVector<Value> terms{ir.int64s(shape, values)};
    for (size_t i = 0; i < spatial; ++i) {
      SmallVector<int64_t> axisShape(rank, 1), axisValues;
      axisShape[2 + i] = yShape[2 + i];
      for (int64_t o = 0; o < yShape[2 + i]; ++o)
        axisValues.push_back((o * window.strides[i] - window.pads[i]) *
                             axisStride[2 + i]);
      terms.push_back(ir.int64s(axisShape, axisValues));
    }
    return terms;
  }

  /// int64 flat indices -> int8 offsets (in forward).
  Value encode(IRBuilding &ir, Value indices, ValueRange originTerms) {
    Value r = ir.sub(indices, sum(ir, originTerms));
    if (xShape.size() == 4) {
      // Named in order: the order in which C++ evaluates arguments is up to
      // the compiler, and the ops' order is the schedule.
      Value span = scalar(ir, rowSpan());
      Value skipped = scalar(ir, rowSpan() - window.kernel[1]);
      r = ir.sub(r, ir.mul(ir.div(r, span), skipped));
    }
    return ir.cast(r, ir.getBuilder().getI8Type());
  }

  /// int8 offsets -> int64 flat indices (in backward).
  Value decode(IRBuilding &ir, Value offsets, ValueRange originTerms) {
    Value k = ir.cast(offsets, ir.getBuilder().getI64Type());
    if (xShape.size() == 4) {
      Value width = scalar(ir, window.kernel[1]);
      Value skipped = scalar(ir, rowSpan() - window.kernel[1]);
      k = ir.add(k, ir.mul(ir.div(k, width), skipped));
    }
    return ir.add(k, sum(ir, originTerms));
  }

private:
  int64_t rowSpan() const { return window.dilations[0] * xShape.back(); }
  static Value scalar(IRBuilding &ir, int64_t value) {
    return ir.scalar(ir.getBuilder().getI64Type(), double(value));
  }
  static Value sum(IRBuilding &ir, ValueRange terms) {
    Value total = terms.front();
    for (Value term : terms.drop_front())
      total = ir.add(total, term);
    return total;
  }

  SmallVector<int64_t> xShape, yShape;
  Window window;
  bool applies = false;
};

FailureOr<SmallVector<Value>> saveFor(ONNXMaxPoolOp op, OpBuilder &builder,
                                      ArrayRef<bool>) {
  if (op.getStorageOrder() != 0)
    return op.emitOpError("gradient needs storage_order = 0");
  // Where each maximum came from; X itself is not needed.
  if (isa<NoneType>(op.getIndices().getType()))
    op.getIndices().setType(cast<RankedTensorType>(op.getY().getType())
                                .clone(builder.getI64Type()));
  WindowOffsets offsets(op);
  if (!offsets.appliesToOp())
    return SmallVector<Value>{op.getIndices()};
  IRBuilding ir(builder, op.getLoc());
  SmallVector<Value> saved{Value()};
  llvm::append_range(saved, offsets.buildOriginTerms(ir));
  saved[0] = offsets.encode(ir, op.getIndices(), ArrayRef(saved).drop_front());
  return saved;
}

Gradients gradientOf(ONNXMaxPoolOp op, IRBuilding &ir, ValueRange saved,
                     ValueRange dY, ArrayRef<bool>) {
  // Saved: the int64 indices, or the int8 offsets and the origin terms.
  Value indices = saved[0];
  if (saved.size() > 1)
    indices = WindowOffsets(op).decode(ir, indices, saved.drop_front());
  // Overlapping windows can pick one element twice: scatter-add.
  auto xType = cast<RankedTensorType>(op.getX().getType());
  int64_t count = xType.getNumElements();
  int64_t outCount = cast<RankedTensorType>(dY[0].getType()).getNumElements();
  auto flatType = RankedTensorType::get({count}, xType.getElementType());
  Value updates = ir.reshape(dY[0], {outCount});
  Value flatIndices = ir.reshape(indices, {outCount});
  Value flat =
      ir.scatterAdd(ir.zeros(flatType), flatIndices, updates, /*axis=*/0);
  return SmallVector<Value>{ir.reshape(flat, xType.getShape())};
}

Gradients gradientOf(ONNXAveragePoolOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> kernel = intsOr(op.getKernelShape(), 0, 0);
  Window window;
  if (failed(getWindow(op, kernel, window)))
    return failure();
  bool padded = llvm::any_of(window.pads, [](int64_t p) { return p != 0; });
  if (op.getCeilMode() != 0 || (padded && op.getCountIncludePad() == 0))
    return op.emitOpError("gradient is supported without ceil_mode, and "
                          "with padding only when count_include_pad = 1");
  // Every window spreads its gradient evenly: a depthwise ConvTranspose with
  // a constant 1/k kernel.
  SmallVector<int64_t> xShape = shapeOf(op.getX());
  int64_t channels = xShape[1];
  int64_t size = 1;
  for (int64_t k : kernel)
    size *= k;
  SmallVector<int64_t> wShape{channels, 1};
  wShape.append(kernel.begin(), kernel.end());
  Type type = elementTypeOf(dY[0]);
  Value weights = ir.splat(RankedTensorType::get(wShape, type), 1.0 / size);
  return SmallVector<Value>{ir.convTranspose(
      dY[0], weights, window, channels,
      outputPadding(window, ArrayRef(xShape).drop_front(2),
                    ArrayRef(shapeOf(op.getY())).drop_front(2)),
      op.getX().getType())};
}

Gradients gradientOf(ONNXGlobalAveragePoolOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  SmallVector<int64_t> xShape = shapeOf(op.getX());
  int64_t size = 1;
  for (int64_t d : ArrayRef(xShape).drop_front(2))
    size *= d;
  Value scaled = ir.mul(dY[0], ir.scalar(elementTypeOf(dY[0]), 1.0 / size));
  return SmallVector<Value>{ir.expand(scaled, xShape)};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Broadcasts a reduction's gradient back over the reduced axes.
Value unreduce(IRBuilding &ir, Value dY, Value input,
               ArrayRef<int64_t> axes, double scale) {
  SmallVector<int64_t> shape = shapeOf(input);
  SmallVector<int64_t> kept(shape);
  for (int64_t axis : axes)
    kept[axis] = 1;
  Value grad = ir.reshape(dY, kept);
  if (scale != 1.0)
    grad = ir.mul(grad, ir.scalar(elementTypeOf(dY), scale));
  return ir.expand(grad, shape);
}

SmallVector<int64_t> reducedAxes(std::optional<SmallVector<int64_t>> axes,
                                 int64_t rank) {
  SmallVector<int64_t> result;
  if (!axes || axes->empty()) {
    result.resize(rank);
    std::iota(result.begin(), result.end(), 0);
    return result;
  }
  for (int64_t axis : *axes)
    result.push_back(normalizeAxis(axis, rank));
  return result;
}

Gradients gradientOf(ONNXReduceMeanOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  int64_t rank = rankOf(op.getData());
  std::optional<SmallVector<int64_t>> attrAxes;
  if (op.getAxes())
    attrAxes = intsOr(op.getAxes(), 0, 0);
  SmallVector<int64_t> axes = reducedAxes(attrAxes, rank);
  SmallVector<int64_t> shape = shapeOf(op.getData());
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= shape[axis];
  return SmallVector<Value>{
      unreduce(ir, dY[0], op.getData(), axes, 1.0 / count)};
}

Gradients gradientOf(ONNXReduceSumOp op, IRBuilding &ir, ValueRange,
                     ValueRange dY, ArrayRef<bool>) {
  int64_t rank = rankOf(op.getData());
  bool hasAxes = !isa<NoneType>(op.getAxes().getType());
  std::optional<SmallVector<int64_t>> axes;
  if (hasAxes) {
    axes = getConstantInts(op.getAxes());
    if (!axes)
      return op.emitOpError("gradient needs constant axes");
  }
  SmallVector<Value> grads(2);
  if ((!axes || axes->empty()) && op.getNoopWithEmptyAxes()) {
    grads[0] = dY[0];
    return grads;
  }
  grads[0] = unreduce(ir, dY[0], op.getData(), reducedAxes(axes, rank), 1.0);
  return grads;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Axes of X that BatchNormalization reduces: all but the channel axis.
SmallVector<int64_t> batchNormAxes(int64_t rank) {
  SmallVector<int64_t> axes{0};
  for (int64_t axis = 2; axis < rank; ++axis)
    axes.push_back(axis);
  return axes;
}

/// Shape [1, C, 1, ...]: per-channel values broadcast against X.
SmallVector<int64_t> channelShape(ArrayRef<int64_t> xShape) {
  SmallVector<int64_t> shape(xShape.size(), 1);
  shape[1] = xShape[1];
  return shape;
}

FailureOr<SmallVector<Value>> saveFor(ONNXBatchNormalizationOp op,
                                      OpBuilder &builder, ArrayRef<bool>) {
  // Training mode: the input and the batch statistics (mean and 1/std per
  // channel, as PyTorch's save_mean / save_invstd). ONNX's op does not
  // output them, so they are computed next to it.
  // Scale is read too: a parameter, but in mixed precision its half copy.
  if (op.getTrainingMode() == 0)
    return SmallVector<Value>{op.getX(), op.getScale(), op.getInputMean(),
                              op.getInputVar()};
  IRBuilding ir(builder, op.getLoc());
  Value x = op.getX();
  SmallVector<int64_t> axes = batchNormAxes(rankOf(x));
  Value mean = ir.reduceMean(x, axes, /*keepdims=*/true);
  Value centered = ir.sub(x, mean);
  Value var = ir.reduceMean(ir.mul(centered, centered), axes, true);
  Type type = elementTypeOf(x);
  Value std =
      ir.sqrt(ir.add(var, ir.scalar(type, op.getEpsilon().convertToDouble())));
  Value invStd = ir.div(ir.scalar(type, 1.0), std);
  return SmallVector<Value>{x, op.getScale(), mean, invStd};
}

Gradients gradientOf(ONNXBatchNormalizationOp op, IRBuilding &ir,
                     ValueRange saved, ValueRange dY, ArrayRef<bool> wanted) {
  Value x = saved[0];
  SmallVector<int64_t> xShape = shapeOf(x);
  SmallVector<int64_t> axes = batchNormAxes(xShape.size());
  SmallVector<int64_t> perChannel = channelShape(xShape);
  Type type = elementTypeOf(x);
  bool training = op.getTrainingMode() != 0;
  Value mean, invStd;
  if (training) {
    mean = saved[2];
    invStd = saved[3];
  } else {
    mean = ir.reshape(op.getInputMean(), perChannel);
    Value epsilon = ir.scalar(type, op.getEpsilon().convertToDouble());
    Value std =
        ir.sqrt(ir.add(ir.reshape(op.getInputVar(), perChannel), epsilon));
    invStd = ir.div(ir.scalar(type, 1.0), std);
  }
  int64_t channels = xShape[1];
  Value xHat = ir.mul(ir.sub(x, mean), invStd);
  Value dBeta = ir.reduceSum(dY[0], axes, /*keepdims=*/true);
  Value dGamma = ir.reduceSum(ir.mul(dY[0], xHat), axes, true);
  SmallVector<Value> grads(5);
  if (wanted[1])
    grads[1] = ir.reshape(dGamma, {channels});
  if (wanted[2])
    grads[2] = ir.reshape(dBeta, {channels});
  if (wanted[0]) {
    Value gain = ir.mul(ir.reshape(op.getScale(), perChannel), invStd);
    if (training) {
      // dX = gamma invstd / m (m dY - sum dY - xhat sum(dY xhat)), with m
      // the elements per channel: the batch statistics depend on X too.
      double m = double(cast<RankedTensorType>(x.getType()).getNumElements()) /
                 channels;
      Value gammaTerm = ir.mul(xHat, dGamma);
      Value inner =
          ir.sub(ir.sub(ir.mul(dY[0], ir.scalar(type, m)), dBeta), gammaTerm);
      grads[0] = ir.mul(inner, ir.mul(gain, ir.scalar(type, 1.0 / m)));
    } else {
      grads[0] = ir.mul(dY[0], gain);
    }
  }
  return grads;
}

FailureOr<SmallVector<Value>> saveFor(ONNXLayerNormalizationOp op,
                                      OpBuilder &builder, ArrayRef<bool>) {
  // The input and the statistics the op already computes: expose its
  // optional Mean and InvStdDev outputs.
  auto xType = cast<RankedTensorType>(op.getX().getType());
  int64_t axis = normalizeAxis(op.getAxis(), xType.getRank());
  SmallVector<int64_t> statShape(xType.getShape());
  for (int64_t i = axis; i < xType.getRank(); ++i)
    statShape[i] = 1;
  Type statType = op.getStashType() == 1 ? builder.getF32Type()
                                         : xType.getElementType();
  for (Value stat : {op.getMean(), op.getInvStdDev()})
    if (isa<NoneType>(stat.getType()))
      stat.setType(RankedTensorType::get(statShape, statType));
  return SmallVector<Value>{op.getX(), op.getMean(), op.getInvStdDev(),
                            op.getScale()};
}

Gradients gradientOf(ONNXLayerNormalizationOp op, IRBuilding &ir,
                     ValueRange saved, ValueRange dY, ArrayRef<bool> wanted) {
  Value x = saved[0];
  Type type = elementTypeOf(x);
  int64_t rank = rankOf(x);
  int64_t axis = normalizeAxis(op.getAxis(), rank);
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i)
    axes.push_back(i);
  Value mean = ir.cast(saved[1], type), invStd = ir.cast(saved[2], type);
  Value xHat = ir.mul(ir.sub(x, mean), invStd);
  SmallVector<Value> grads(3);
  if (wanted[1])
    grads[1] = ir.sumTo(ir.mul(dY[0], xHat), op.getScale().getType());
  if (wanted[2])
    grads[2] = ir.sumTo(dY[0], op.getB().getType());
  if (wanted[0]) {
    // dX = invstd (g - mean(g) - xhat mean(g xhat)), g = dY Scale
    Value g = ir.mul(dY[0], op.getScale());
    Value meanG = ir.reduceMean(g, axes, /*keepdims=*/true);
    Value meanGX = ir.reduceMean(ir.mul(g, xHat), axes, true);
    Value meanGXTerm = ir.mul(xHat, meanGX);
    grads[0] = ir.mul(invStd, ir.sub(ir.sub(g, meanG), meanGXTerm));
  }
  return grads;
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpT>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpT>, OpT> {
  FailureOr<SmallVector<Value>> saveForBackward(Operation *op,
                                                OpBuilder &builder,
                                                ArrayRef<bool> wanted) const {
    return saveFor(cast<OpT>(op), builder, wanted);
  }
  FailureOr<SmallVector<Value>> buildGradient(Operation *op, OpBuilder &builder,
                                              ValueRange saved,
                                              ValueRange resultGradients,
                                              ArrayRef<bool> wanted) const {
    IRBuilding ir(builder, op->getLoc());
    return gradientOf(cast<OpT>(op), ir, saved, resultGradients, wanted);
  }
};

template <typename... OpTs>
void attachGradientModels(MLIRContext *context) {
  (OpTs::template attachInterface<GradientModel<OpTs>>(*context), ...);
}

} // namespace

void registerGradientExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, ONNXDialect *) {
    attachGradientModels<
        ONNXIdentityOp, ONNXFlattenOp, ONNXReshapeOp, ONNXSqueezeOp,
        ONNXUnsqueezeOp, ONNXTransposeOp, ONNXExpandOp, ONNXConcatOp,
        ONNXSplitOp, ONNXSliceOp, ONNXPadOp, ONNXGatherOp, ONNXScatterNDOp,
        ONNXAddOp, ONNXSubOp, ONNXMulOp, ONNXDivOp, ONNXPowOp, ONNXNegOp,
        ONNXWhereOp, ONNXCastOp, ONNXReluOp, ONNXLeakyReluOp, ONNXSigmoidOp,
        ONNXTanhOp, ONNXExpOp, ONNXSqrtOp, ONNXReciprocalOp, ONNXLogOp,
        ONNXErfOp, ONNXGeluOp, ONNXSwishOp, ONNXHardSigmoidOp, ONNXHardSwishOp,
        ONNXClipOp, ONNXSoftmaxOp, ONNXLogSoftmaxOp, ONNXDropoutOp, ONNXGemmOp,
        ONNXMatMulOp, ONNXEinsumOp, ONNXConvOp, ONNXMaxPoolOp,
        ONNXAveragePoolOp, ONNXGlobalAveragePoolOp, ONNXReduceMeanOp,
        ONNXReduceSumOp, ONNXBatchNormalizationOp, ONNXLayerNormalizationOp>(
        context);
  });
}

} // namespace vram
