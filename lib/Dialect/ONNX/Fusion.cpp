//===- Fusion.cpp - decomposed Gelu, Swish, LayerNorm, fused again --------===//

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/Patterns.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;

namespace vram {
namespace {

/// The value of a constant splat float operand (a scalar in the chain).
std::optional<double> getSplatFloat(Value value) {
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool isNear(std::optional<double> value, double expected) {
  return value && std::abs(*value - expected) <= 1e-4 * std::abs(expected);
}

/// The operand of a commutative binary op that is not `other`, or null.
template <typename OpT> Value otherOperand(OpT op, Value other) {
  if (op.getA() == other)
    return op.getB();
  if (op.getB() == other)
    return op.getA();
  return {};
}

bool hasOneUse(Value value) { return value.hasOneUse(); }

/// Whether `value` is x^3: x * (x * x) in either order, or Pow(x, 3).
bool isCube(Value value, Value x) {
  if (auto pow = value.getDefiningOp<ONNXPowOp>())
    return pow.getX() == x && isNear(getSplatFloat(pow.getY()), 3.0);
  auto mul = value.getDefiningOp<ONNXMulOp>();
  if (!mul)
    return false;
  Value square = otherOperand(mul, x);
  auto squareMul = square ? square.getDefiningOp<ONNXMulOp>() : nullptr;
  return squareMul && hasOneUse(square) && squareMul.getA() == x &&
         squareMul.getB() == x;
}

/// erf's argument of the exact GELU: x / sqrt(2), also as x * 0.7071.
bool isErfGeluArgument(Value scaled, Value x) {
  if (auto div = scaled.getDefiningOp<ONNXDivOp>())
    return div.getA() == x && isNear(getSplatFloat(div.getB()), M_SQRT2);
  if (auto mul = scaled.getDefiningOp<ONNXMulOp>())
    return isNear(getSplatFloat(otherOperand(mul, x)), M_SQRT1_2);
  return false;
}

/// tanh's argument of the tanh GELU (GPT-2's gelu_new):
/// sqrt(2 / pi) * (x + 0.044715 * x^3).
bool isTanhGeluArgument(Value scaled, Value x) {
  auto mul = scaled.getDefiningOp<ONNXMulOp>();
  if (!mul)
    return false;
  for (Value sum : {mul.getA(), mul.getB()}) {
    auto add = sum.getDefiningOp<ONNXAddOp>();
    if (!add || !hasOneUse(sum) ||
        !isNear(getSplatFloat(otherOperand(mul, sum)), std::sqrt(2 / M_PI)))
      continue;
    Value term = otherOperand(add, x);
    auto termMul = term ? term.getDefiningOp<ONNXMulOp>() : nullptr;
    if (!termMul || !hasOneUse(term))
      continue;
    for (Value cube : {termMul.getA(), termMul.getB()})
      if (hasOneUse(cube) && isCube(cube, x) &&
          isNear(getSplatFloat(otherOperand(termMul, cube)), 0.044715))
        return true;
  }
  return false;
}

/// 0.5 * x * (1 + erf(x / sqrt(2))) and 0.5 * x * (1 + tanh(sqrt(2 / pi) *
/// (x + 0.044715 x^3))), as torch.onnx writes nn.GELU (exact and
/// approximate="tanh") before opset 20: Mul(Mul(x, Add(Erf|Tanh(...), 1)),
/// 0.5), factors in any order.
struct FuseGelu : OpRewritePattern<ONNXMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXMulOp root,
                                PatternRewriter &rewriter) const override {
    // The three factors x, 0.5 and (1 + erf|tanh(...)), as a product of two
    // Muls.
    for (auto [innerValue, outer] : {std::pair{root.getA(), root.getB()},
                                     std::pair{root.getB(), root.getA()}}) {
      auto inner = innerValue.getDefiningOp<ONNXMulOp>();
      if (inner && hasOneUse(innerValue) &&
          succeeded(rewriteFactors(root, {inner.getA(), inner.getB(), outer},
                                   rewriter)))
        return success();
    }
    return failure();
  }

  LogicalResult rewriteFactors(ONNXMulOp root, ArrayRef<Value> factors,
                               PatternRewriter &rewriter) const {
    // (1 + f(...)) is the Add with an Erf or Tanh operand; x is what is left.
    Value half, onePlusF, fValue, x;
    for (Value factor : factors) {
      auto add = factor.getDefiningOp<ONNXAddOp>();
      Value f;
      if (add && !onePlusF)
        for (Value operand : {add.getA(), add.getB()})
          if ((operand.getDefiningOp<ONNXErfOp>() ||
               operand.getDefiningOp<ONNXTanhOp>()) &&
              isNear(getSplatFloat(otherOperand(add, operand)), 1.0))
            f = operand;
      if (f) {
        onePlusF = factor;
        fValue = f;
      } else if (!half && isNear(getSplatFloat(factor), 0.5)) {
        half = factor;
      } else {
        x = factor;
      }
    }
    if (!half || !onePlusF || !x || !hasOneUse(onePlusF) ||
        !hasOneUse(fValue) || x.getType() != root.getType())
      return failure();
    Operation *f = fValue.getDefiningOp();
    Value scaled = f->getOperand(0);
    if (!hasOneUse(scaled))
      return failure();
    bool isErf = isa<ONNXErfOp>(f);
    if (isErf ? !isErfGeluArgument(scaled, x) : !isTanhGeluArgument(scaled, x))
      return failure();
    rewriter.replaceOpWithNewOp<ONNXGeluOp>(
        root, root.getType(), x, rewriter.getStringAttr(isErf ? "none" : "tanh"));
    return success();
  }
};

/// x * sigmoid(x), as torch.onnx writes nn.SiLU before opset 24 has Swish.
/// Backward then keeps x alone (as PyTorch's SiLU), not x and sigmoid(x).
struct FuseSwish : OpRewritePattern<ONNXMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXMulOp root,
                                PatternRewriter &rewriter) const override {
    for (Value gate : {root.getA(), root.getB()}) {
      auto sigmoid = gate.getDefiningOp<ONNXSigmoidOp>();
      if (!sigmoid || !hasOneUse(gate) ||
          otherOperand(root, gate) != sigmoid.getX() ||
          sigmoid.getX().getType() != root.getType())
        continue;
      rewriter.replaceOpWithNewOp<ONNXSwishOp>(root, root.getType(),
                                               sigmoid.getX(),
                                               rewriter.getF32FloatAttr(1.0));
      return success();
    }
    return failure();
  }
};

/// Whether `value` is ReduceMean over trailing axes of `input` with
/// keepdims; sets `axis` to the first of them.
bool isTrailingMean(Value value, Value input, int64_t &axis) {
  auto mean = value.getDefiningOp<ONNXReduceMeanOp>();
  auto type = dyn_cast<RankedTensorType>(input.getType());
  if (!mean || mean.getData() != input || !type || !mean.getKeepdims() ||
      !mean.getAxesAttr())
    return false;
  SmallVector<int64_t> axes;
  for (Attribute a : mean.getAxesAttr()) {
    int64_t d = cast<IntegerAttr>(a).getInt();
    axes.push_back(d < 0 ? d + type.getRank() : d);
  }
  llvm::sort(axes);
  for (auto [i, d] : llvm::enumerate(axes))
    if (d != type.getRank() - int64_t(axes.size()) + int64_t(i))
      return false;
  axis = axes.front();
  return !axes.empty();
}

/// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * gamma + beta over
/// trailing axes, as torch.onnx writes nn.LayerNorm before opset 17.
struct FuseLayerNormalization : OpRewritePattern<ONNXAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXAddOp root,
                                PatternRewriter &rewriter) const override {
    for (auto [scaledValue, beta] :
         {std::pair{root.getA(), root.getB()},
          std::pair{root.getB(), root.getA()}}) {
      auto scale = scaledValue.getDefiningOp<ONNXMulOp>();
      if (!scale || !hasOneUse(scaledValue))
        continue;
      for (auto [normalizedValue, gamma] :
           {std::pair{scale.getA(), scale.getB()},
            std::pair{scale.getB(), scale.getA()}}) {
        if (succeeded(rewrite(root, normalizedValue, gamma, beta, rewriter)))
          return success();
      }
    }
    return failure();
  }

  LogicalResult rewrite(ONNXAddOp root, Value normalizedValue, Value gamma,
                        Value beta, PatternRewriter &rewriter) const {
    auto div = normalizedValue.getDefiningOp<ONNXDivOp>();
    if (!div || !hasOneUse(normalizedValue))
      return failure();
    auto centered = div.getA().getDefiningOp<ONNXSubOp>();
    auto sqrt = div.getB().getDefiningOp<ONNXSqrtOp>();
    if (!centered || !sqrt || !hasOneUse(div.getB()))
      return failure();
    Value x = centered.getA();
    int64_t axis = 0, varianceAxis = 0;
    if (!isTrailingMean(centered.getB(), x, axis))
      return failure();
    auto addEps = sqrt.getX().getDefiningOp<ONNXAddOp>();
    if (!addEps || !hasOneUse(sqrt.getX()))
      return failure();
    Value variance = addEps.getA(), epsValue = addEps.getB();
    std::optional<double> eps = getSplatFloat(epsValue);
    if (!eps) {
      std::swap(variance, epsValue);
      eps = getSplatFloat(epsValue);
    }
    if (!eps || !hasOneUse(variance))
      return failure();
    auto varianceMean = variance.getDefiningOp<ONNXReduceMeanOp>();
    if (!varianceMean)
      return failure();
    auto square = varianceMean.getData().getDefiningOp<ONNXPowOp>();
    if (!square || square.getX() != centered.getResult() ||
        !isNear(getSplatFloat(square.getY()), 2.0) ||
        !isTrailingMean(variance, varianceMean.getData(), varianceAxis) ||
        varianceAxis != axis)
      return failure();
    // The centered value feeds only the square and the division.
    for (Operation *user : centered->getUsers())
      if (user != square && user != div)
        return failure();
    // Scale and bias must not broadcast beyond the normalized dims.
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    for (Value param : {gamma, beta}) {
      auto type = dyn_cast<RankedTensorType>(param.getType());
      if (!type || type.getRank() > xType.getRank() - axis)
        return failure();
    }
    if (root.getType() != x.getType())
      return failure();
    Type none = rewriter.getNoneType();
    auto fused = ONNXLayerNormalizationOp::create(
        rewriter, root.getLoc(), TypeRange{root.getType(), none, none}, x,
        gamma, beta, rewriter.getI64IntegerAttr(axis),
        rewriter.getF32FloatAttr(*eps), rewriter.getI64IntegerAttr(1));
    rewriter.replaceOp(root, fused.getY());
    return success();
  }
};

/// MatMul(A, Transpose(W)) with a 2-d W, as exporters write a linear layer
/// whose weight is shared the other way round (a language model head tied
/// to the embedding): Gemm(transB = 1) on A viewed as 2-d. Runtimes multiply
/// by the transposed weight in place; materialising the transpose would
/// count a weight-sized copy.
struct FuseTransposedMatMul : OpRewritePattern<ONNXMatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXMatMulOp matmul,
                                PatternRewriter &rewriter) const override {
    auto transpose = matmul.getB().getDefiningOp<ONNXTransposeOp>();
    auto aType = dyn_cast<RankedTensorType>(matmul.getA().getType());
    auto resultType = dyn_cast<RankedTensorType>(matmul.getType());
    if (!transpose || !matmul.getB().hasOneUse() || !aType ||
        !aType.hasStaticShape() || aType.getRank() < 2 || !resultType ||
        !resultType.hasStaticShape())
      return failure();
    auto wType = dyn_cast<RankedTensorType>(transpose.getData().getType());
    if (!wType || wType.getRank() != 2)
      return failure();
    if (auto perm = transpose.getPermAttr())
      if (cast<IntegerAttr>(perm[0]).getInt() != 1)
        return failure();
    Location loc = matmul.getLoc();
    int64_t k = aType.getShape().back();
    int64_t rows = aType.getNumElements() / k;
    auto shapeConstant = [&](ArrayRef<int64_t> shape) {
      return ONNXConstantOp::create(rewriter, loc, shape);
    };
    Value rowsView = ONNXReshapeOp::create(
        rewriter, loc, RankedTensorType::get({rows, k}, aType.getElementType()),
        matmul.getA(), shapeConstant({rows, k}), rewriter.getI64IntegerAttr(0));
    Value none = ONNXNoValueOp::create(rewriter, loc);
    Value product = ONNXGemmOp::create(
        rewriter, loc,
        RankedTensorType::get({rows, wType.getDimSize(0)},
                              aType.getElementType()),
        rowsView, transpose.getData(), none, rewriter.getF32FloatAttr(1.0f),
        rewriter.getF32FloatAttr(1.0f), rewriter.getI64IntegerAttr(0),
        rewriter.getI64IntegerAttr(1));
    rewriter.replaceOpWithNewOp<ONNXReshapeOp>(
        matmul, resultType, product, shapeConstant(resultType.getShape()),
        rewriter.getI64IntegerAttr(0));
    return success();
  }
};

} // namespace

void populateDecomposedOpFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGelu, FuseSwish, FuseLayerNormalization,
               FuseTransposedMatMul>(
      patterns.getContext());
}

} // namespace vram
