//===- Expansion.cpp - unmodelled operators spelled in modelled ops -------===//

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/Patterns.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace vram {
namespace {

/// Whether `value` is a constant whose every element is `expected`.
bool isSplatOf(Value value, double expected) {
  DenseFPElementsAttr attr;
  return matchPattern(value, m_Constant(&attr)) && attr.isSplat() &&
         attr.getSplatValue<APFloat>().convertToDouble() == expected;
}

/// InstanceNormalization(X [N, C, D...], scale [C], B [C]) is
/// LayerNormalization over the spatial axes (axis 2, float statistics at
/// least)
/// followed by the per-channel affine map. torch.onnx writes nn.GroupNorm
/// as one, on X viewed as [N, groups, rest] with unit scale and zero bias,
/// which are then left out. The layer norm has a gradient, a lowering and
/// the statistics PyTorch's group norm keeps for backward (mean and inverse
/// deviation per row), so diffusion U-Nets train and run.
struct ExpandInstanceNormalization : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node,
                                PatternRewriter &rewriter) const override {
    if (node.getOpType() != "InstanceNormalization" ||
        !node.getDomain().empty() || node.getInputs().size() != 3 ||
        node.getOutputs().size() != 1)
      return failure();
    Value x = node.getInputs()[0], scale = node.getInputs()[1],
          bias = node.getInputs()[2];
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    auto scaleType = dyn_cast<RankedTensorType>(scale.getType());
    auto biasType = dyn_cast<RankedTensorType>(bias.getType());
    if (!xType || xType.getRank() < 3 ||
        !isa<FloatType>(xType.getElementType()) || !scaleType ||
        !scaleType.hasStaticShape() || scaleType.getRank() != 1 ||
        biasType != scaleType || node.getOutputs()[0].getType() != xType)
      return failure();
    double epsilon = 1e-5;
    if (auto attr = node->getAttrOfType<FloatAttr>("epsilon"))
      epsilon = attr.getValueAsDouble();

    Location loc = node.getLoc();
    Type elementType = xType.getElementType();
    auto unitType = RankedTensorType::get({1}, elementType);
    Value ones = ONNXConstantOp::create(
        rewriter, loc, unitType,
        DenseElementsAttr::get(unitType,
                               rewriter.getFloatAttr(elementType, 1.0)));
    // Statistics in float (TensorProto type 1), or double for double data.
    int64_t statisticsType = elementType.isF64() ? 11 : 1;
    Value none = ONNXNoValueOp::create(rewriter, loc);
    Type noneType = rewriter.getNoneType();
    Value y =
        ONNXLayerNormalizationOp::create(
            rewriter, loc, TypeRange{xType, noneType, noneType}, x, ones, none,
            rewriter.getI64IntegerAttr(2), rewriter.getF32FloatAttr(epsilon),
            rewriter.getI64IntegerAttr(statisticsType))
            .getY();
    // Scale and bias as [C, 1, ...]: one value per channel, broadcast over
    // the spatial dims.
    SmallVector<int64_t> channelShape(xType.getRank() - 1, 1);
    channelShape[0] = scaleType.getDimSize(0);
    auto perChannel = [&](Value value) -> Value {
      return ONNXReshapeOp::create(
          rewriter, loc, RankedTensorType::get(channelShape, elementType),
          value, ONNXConstantOp::create(rewriter, loc, channelShape),
          rewriter.getI64IntegerAttr(0));
    };
    if (!isSplatOf(scale, 1.0))
      y = ONNXMulOp::create(rewriter, loc, xType, y, perChannel(scale));
    if (!isSplatOf(bias, 0.0))
      y = ONNXAddOp::create(rewriter, loc, xType, y, perChannel(bias));
    rewriter.replaceOp(node, y);
    return success();
  }
};

/// Min and Max of any number of broadcasting operands, as a chain of
/// selections: r = Where(Less(x, r), x, r) for Min (Greater for Max). Exact
/// on integers (T5's relative-position buckets) and on floats but for a NaN
/// in a later operand, which the selection drops where ONNX propagates it.
/// The gradient goes to the selected operand (ties to the earlier one).
struct ExpandMinMax : OpRewritePattern<ONNXNodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ONNXNodeOp node,
                                PatternRewriter &rewriter) const override {
    bool isMin = node.getOpType() == "Min";
    if ((!isMin && node.getOpType() != "Max") || !node.getDomain().empty() ||
        node.getInputs().empty() || node.getOutputs().size() != 1)
      return failure();
    // The type after each operand; the last must be the node's.
    SmallVector<Type> types{node.getInputs()[0].getType()};
    for (Value next : node.getInputs().drop_front())
      types.push_back(
          OpTrait::util::getBroadcastedType(types.back(), next.getType()));
    Type elementType = getElementTypeOrSelf(types.front());
    for (auto [input, type] : llvm::zip(node.getInputs(), types))
      if (!type || !isa<RankedTensorType>(type) ||
          getElementTypeOrSelf(input.getType()) != elementType)
        return failure();
    if (types.back() != node.getOutputs()[0].getType())
      return failure();
    Location loc = node.getLoc();
    Value result = node.getInputs()[0];
    for (auto [next, type] : llvm::zip(node.getInputs().drop_front(),
                                       ArrayRef(types).drop_front())) {
      Type conditionType =
          cast<RankedTensorType>(type).clone(rewriter.getI1Type());
      Value takeNext = isMin ? Value(ONNXLessOp::create(
                                   rewriter, loc, conditionType, next, result))
                             : Value(ONNXGreaterOp::create(
                                   rewriter, loc, conditionType, next, result));
      result = ONNXWhereOp::create(rewriter, loc, type, takeNext, next, result);
    }
    rewriter.replaceOp(node, result);
    return success();
  }
};

} // namespace

void populateGenericNodeExpansionPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandInstanceNormalization, ExpandMinMax>(
      patterns.getContext());
}

} // namespace vram
