//===- ElementwiseGradients.cpp - gradients of elementwise ops -----------===//
//
// Arithmetic with broadcasting (each gradient summed back to its operand's
// shape) and activations, each keeping its input or its result, whichever
// its derivative is cheaper from.
//
//===----------------------------------------------------------------------===//
#include "GradientRules.h"

#include <cmath>

#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace vram::gradient_rules;

namespace vram {

//===----------------------------------------------------------------------===//
// Elementwise arithmetic (with broadcasting: gradients are summed back to
// the operand shapes)
//===----------------------------------------------------------------------===//

static Gradients gradientOf(ONNXAddOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(dY[0], op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(dY[0], op.getB().getType());
  return grads;
}

static Gradients gradientOf(ONNXSubOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(dY[0], op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.neg(dY[0]), op.getB().getType());
  return grads;
}

/// Each operand's gradient reads every other operand.
static FailureOr<SmallVector<Value>> saveFor(ONNXEinsumOp op, OpBuilder &,
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
static Gradients gradientOf(ONNXEinsumOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
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

static FailureOr<SmallVector<Value>> saveFor(ONNXMulOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  return saveForBilinear(op.getA(), op.getB(), wanted);
}

static Gradients gradientOf(ONNXMulOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  SmallVector<Value> grads(2);
  if (wanted[0])
    grads[0] = ir.sumTo(ir.mul(dY[0], op.getB()), op.getA().getType());
  if (wanted[1])
    grads[1] = ir.sumTo(ir.mul(dY[0], op.getA()), op.getB().getType());
  return grads;
}

static FailureOr<SmallVector<Value>> saveFor(ONNXDivOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  SmallVector<Value> saved{op.getB()};
  if (wanted[1])
    saved.push_back(op.getC());
  return saved;
}

static Gradients gradientOf(ONNXDivOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
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

static FailureOr<SmallVector<Value>> saveFor(ONNXPowOp op, OpBuilder &,
                                             ArrayRef<bool> wanted) {
  SmallVector<Value> saved{op.getX()};
  if (wanted[1])
    saved.push_back(op.getZ());
  return saved;
}

static Gradients gradientOf(ONNXPowOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  Value x = op.getX(), exponent = op.getY();
  Type elementType = getElementTypeOrSelf(x.getType());
  SmallVector<Value> grads(2);
  if (wanted[0]) {
    // dX = dY E X^(E - 1)
    Value e = ir.cast(exponent, elementType);
    Value lowered = ir.pow(x, ir.sub(e, ir.scalar(elementType, 1.0)));
    grads[0] = ir.sumTo(ir.mul(dY[0], ir.mul(e, lowered)), x.getType());
  }
  if (wanted[1]) {
    // dE = dY X^E ln X, and 0 where X = 0 (PyTorch's convention: the limit
    // for E > 0, where ln X alone is -inf).
    Value zero = ir.scalar(elementType, 0.0);
    Value term =
        ir.where(ir.equal(x, zero), zero, ir.mul(op.getZ(), ir.log(x)));
    grads[1] = ir.sumTo(ir.mul(dY[0], term), exponent.getType());
  }
  return grads;
}

static Gradients gradientOf(ONNXNegOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.neg(dY[0])};
}

static FailureOr<SmallVector<Value>> saveFor(ONNXWhereOp op, OpBuilder &,
                                             ArrayRef<bool>) {
  return SmallVector<Value>{op.getCondition()};
}

static Gradients gradientOf(ONNXWhereOp op, IRBuilding &ir, ValueRange saved,
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

static Gradients gradientOf(ONNXCastOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
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
  static FailureOr<SmallVector<Value>> saveFor(OpT op, OpBuilder &,            \
                                               ArrayRef<bool>) {               \
    return SmallVector<Value>{op->getResult(0)};                               \
  }
/// Keeps the operand.
#define VRAM_SAVES_INPUT(OpT)                                                  \
  static FailureOr<SmallVector<Value>> saveFor(OpT op, OpBuilder &,            \
                                               ArrayRef<bool>) {               \
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
VRAM_SAVES_INPUT(ONNXCosOp)
VRAM_SAVES_INPUT(ONNXSinOp)
VRAM_SAVES_INPUT(ONNXAbsOp)
VRAM_SAVES_INPUT(ONNXGeluOp)
VRAM_SAVES_INPUT(ONNXSwishOp)
VRAM_SAVES_INPUT(ONNXHardSigmoidOp)
VRAM_SAVES_INPUT(ONNXHardSwishOp)
#undef VRAM_SAVES_RESULT
#undef VRAM_SAVES_INPUT

static Gradients gradientOf(ONNXReluOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  Value zero = ir.scalar(elementTypeOf(saved[0]), 0.0);
  return SmallVector<Value>{ir.where(ir.greater(saved[0], zero), dY[0], zero)};
}

static Gradients gradientOf(ONNXLeakyReluOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY, ArrayRef<bool>) {
  Type type = elementTypeOf(saved[0]);
  Value negative =
      ir.mul(dY[0], ir.scalar(type, op.getAlpha().convertToDouble()));
  return SmallVector<Value>{
      ir.where(ir.greater(saved[0], ir.scalar(type, 0.0)), dY[0], negative)};
}

static Gradients gradientOf(ONNXSigmoidOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // s' = s (1 - s)
  Value one = ir.scalar(elementTypeOf(saved[0]), 1.0);
  return SmallVector<Value>{
      ir.mul(dY[0], ir.mul(saved[0], ir.sub(one, saved[0])))};
}

static Gradients gradientOf(ONNXTanhOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // tanh' = 1 - tanh^2
  Value one = ir.scalar(elementTypeOf(saved[0]), 1.0);
  return SmallVector<Value>{
      ir.mul(dY[0], ir.sub(one, ir.mul(saved[0], saved[0])))};
}

static Gradients gradientOf(ONNXExpOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.mul(dY[0], saved[0])};
}

static Gradients gradientOf(ONNXSqrtOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // sqrt(x)' = 1 / (2 sqrt(x))
  Value two = ir.scalar(elementTypeOf(saved[0]), 2.0);
  return SmallVector<Value>{ir.div(dY[0], ir.mul(saved[0], two))};
}

static Gradients gradientOf(ONNXReciprocalOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY, ArrayRef<bool>) {
  // (1/x)' = -1/x^2 = -y^2
  return SmallVector<Value>{ir.neg(ir.mul(dY[0], ir.mul(saved[0], saved[0])))};
}

static Gradients gradientOf(ONNXLogOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  return SmallVector<Value>{ir.div(dY[0], saved[0])};
}

static Gradients gradientOf(ONNXCosOp, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // cos'(x) = -sin(x)
  return SmallVector<Value>{ir.neg(ir.mul(dY[0], ir.sin(saved[0])))};
}

static Gradients gradientOf(ONNXSinOp, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // sin'(x) = cos(x)
  return SmallVector<Value>{ir.mul(dY[0], ir.cos(saved[0]))};
}

static Gradients gradientOf(ONNXAbsOp, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // |x|' = sign(x), 0 at 0 as in PyTorch.
  Type type = elementTypeOf(saved[0]);
  Value zero = ir.scalar(type, 0.0);
  Value sign = ir.where(
      ir.greater(saved[0], zero), ir.scalar(type, 1.0),
      ir.where(ir.greater(zero, saved[0]), ir.scalar(type, -1.0), zero));
  return SmallVector<Value>{ir.mul(dY[0], sign)};
}

static Gradients gradientOf(ONNXErfOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // erf'(x) = 2/sqrt(pi) exp(-x^2)
  Type type = elementTypeOf(saved[0]);
  Value exp = ir.exp(ir.neg(ir.mul(saved[0], saved[0])));
  return SmallVector<Value>{
      ir.mul(dY[0], ir.mul(exp, ir.scalar(type, 2.0 / std::sqrt(M_PI))))};
}

static Gradients gradientOf(ONNXSwishOp op, IRBuilding &ir, ValueRange saved,
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

static Gradients gradientOf(ONNXGeluOp op, IRBuilding &ir, ValueRange saved,
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

static Gradients gradientOf(ONNXHardSigmoidOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY, ArrayRef<bool>) {
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

static Gradients gradientOf(ONNXHardSwishOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY, ArrayRef<bool>) {
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

static FailureOr<SmallVector<Value>> saveFor(ONNXClipOp op, OpBuilder &,
                                             ArrayRef<bool>) {
  return SmallVector<Value>{op.getInput()};
}

static Gradients gradientOf(ONNXClipOp op, IRBuilding &ir, ValueRange saved,
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

static Gradients gradientOf(ONNXTriluOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool> wanted) {
  if (wanted[1])
    return op.emitOpError("k has no gradient");
  // The kept elements pass dY through, the zeroed ones nothing.
  return SmallVector<Value>{ir.trilu(dY[0], op.getK(), op.getUpper() != 0),
                            Value()};
}

static Gradients gradientOf(ONNXSoftmaxOp op, IRBuilding &ir, ValueRange saved,
                            ValueRange dY, ArrayRef<bool>) {
  // dX = Y (dY - sum(dY Y, axis))
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(saved[0]));
  Value dot = ir.reduceSum(ir.mul(dY[0], saved[0]), {axis}, /*keepdims=*/true);
  return SmallVector<Value>{ir.mul(saved[0], ir.sub(dY[0], dot))};
}

static Gradients gradientOf(ONNXLogSoftmaxOp op, IRBuilding &ir,
                            ValueRange saved, ValueRange dY, ArrayRef<bool>) {
  // dX = dY - exp(Y) sum(dY, axis)
  int64_t axis = normalizeAxis(op.getAxis(), rankOf(saved[0]));
  Value total = ir.reduceSum(dY[0], {axis}, /*keepdims=*/true);
  return SmallVector<Value>{ir.sub(dY[0], ir.mul(ir.exp(saved[0]), total))};
}

static FailureOr<SmallVector<Value>>
saveFor(ONNXDropoutOp op, OpBuilder &builder, ArrayRef<bool>) {
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

static Gradients gradientOf(ONNXDropoutOp op, IRBuilding &ir, ValueRange saved,
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

void gradient_rules::attachElementwiseGradients(MLIRContext *context) {
  attachGradientModels<
      ONNXAddOp, ONNXSubOp, ONNXMulOp, ONNXDivOp, ONNXPowOp, ONNXNegOp,
      ONNXWhereOp, ONNXCastOp, ONNXReluOp, ONNXLeakyReluOp, ONNXSigmoidOp,
      ONNXTanhOp, ONNXExpOp, ONNXSqrtOp, ONNXReciprocalOp, ONNXLogOp, ONNXErfOp,
      ONNXCosOp, ONNXSinOp, ONNXAbsOp, ONNXTriluOp, ONNXGeluOp, ONNXSwishOp,
      ONNXHardSigmoidOp, ONNXHardSwishOp, ONNXClipOp, ONNXSoftmaxOp,
      ONNXLogSoftmaxOp, ONNXDropoutOp, ONNXEinsumOp>(context);
}

} // namespace vram
