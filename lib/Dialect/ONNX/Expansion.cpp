//===- Expansion.cpp - unmodelled operators spelled in modelled ops -------===//

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/Patterns.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;

namespace vram {
namespace {

/// Whether `value` is a constant whose every element is `expected`.
bool isSplatOf(Value value, double expected) {
  DenseFPElementsAttr attr;
  return matchPattern(value, m_Constant(&attr)) && attr.isSplat() &&
         attr.getSplatValue<APFloat>().convertToDouble() == expected;
}

/// A pattern that expands the default-domain onnx.Node of some operators:
/// `expand` sees only those.
struct NodeExpansion : OpRewritePattern<ONNXNodeOp> {
  NodeExpansion(MLIRContext *context, ArrayRef<StringRef> opTypes)
      : OpRewritePattern(context), opTypes(opTypes) {}

  LogicalResult matchAndRewrite(ONNXNodeOp node,
                                PatternRewriter &rewriter) const final {
    if (!node.getDomain().empty() ||
        !llvm::is_contained(opTypes, node.getOpType()))
      return failure();
    return expand(node, rewriter);
  }

  virtual LogicalResult expand(ONNXNodeOp node,
                               PatternRewriter &rewriter) const = 0;

private:
  SmallVector<StringRef> opTypes;
};

/// Builds the ops of an expansion with their result types: every value in
/// it is a static-shaped tensor of one float element type.
class ExpansionBuilder {
public:
  ExpansionBuilder(PatternRewriter &rewriter, Location loc, Type elementType)
      : rewriter(rewriter), loc(loc), elementType(elementType) {}

  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, elementType);
  }
  static SmallVector<int64_t> shapeOf(Value value) {
    return llvm::to_vector(cast<RankedTensorType>(value.getType()).getShape());
  }
  Value none() { return ONNXNoValueOp::create(rewriter, loc); }
  Value zeros(ArrayRef<int64_t> shape) {
    return ONNXConstantOp::create(
        rewriter, loc, type(shape),
        DenseElementsAttr::get(type(shape),
                               rewriter.getFloatAttr(elementType, 0.0)));
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return ONNXReshapeOp::create(rewriter, loc, type(shape), x,
                                 ONNXConstantOp::create(rewriter, loc, shape),
                                 rewriter.getI64IntegerAttr(0));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    SmallVector<int64_t> from = shapeOf(x), shape;
    for (int64_t axis : perm)
      shape.push_back(from[axis]);
    return ONNXTransposeOp::create(rewriter, loc, type(shape), x,
                                   rewriter.getI64ArrayAttr(perm));
  }
  /// Rows [begin, end) of `x` along `axis`.
  Value slice(Value x, int64_t axis, int64_t begin, int64_t end) {
    SmallVector<int64_t> shape = shapeOf(x);
    shape[axis] = end - begin;
    return ONNXSliceOp::create(
        rewriter, loc, type(shape), x,
        ONNXConstantOp::create(rewriter, loc, ArrayRef<int64_t>{begin}),
        ONNXConstantOp::create(rewriter, loc, ArrayRef<int64_t>{end}),
        ONNXConstantOp::create(rewriter, loc, ArrayRef<int64_t>{axis}), none());
  }
  /// `x` cut into `count` equal parts along `axis`.
  SmallVector<Value> split(Value x, int64_t axis, int64_t count) {
    SmallVector<int64_t> shape = shapeOf(x);
    shape[axis] /= count;
    SmallVector<Type> types(count, type(shape));
    auto op = ONNXSplitOp::create(rewriter, loc, types, x, none(),
                                  rewriter.getI64IntegerAttr(axis));
    return SmallVector<Value>(op.getOutputs());
  }
  Value concat(ValueRange parts, int64_t axis) {
    SmallVector<int64_t> shape = shapeOf(parts.front());
    shape[axis] = 0;
    for (Value part : parts)
      shape[axis] += shapeOf(part)[axis];
    return ONNXConcatOp::create(rewriter, loc, type(shape), parts,
                                rewriter.getI64IntegerAttr(axis));
  }
  /// a b^T + c (c broadcast over the rows, or none).
  Value linear(Value a, Value b, Value c) {
    return ONNXGemmOp::create(
        rewriter, loc, type({shapeOf(a)[0], shapeOf(b)[0]}), a, b, c,
        rewriter.getF32FloatAttr(1.0f), rewriter.getF32FloatAttr(1.0f),
        rewriter.getI64IntegerAttr(0), rewriter.getI64IntegerAttr(1));
  }
  template <typename OpT> Value binary(Value a, Value b) {
    return OpT::create(rewriter, loc, a.getType(), a, b);
  }
  template <typename OpT> Value unary(Value x) {
    return OpT::create(rewriter, loc, x.getType(), x);
  }

private:
  PatternRewriter &rewriter;
  Location loc;
  Type elementType;
};

/// InstanceNormalization(X [N, C, D...], scale [C], B [C]) is
/// LayerNormalization over the spatial axes (axis 2, float statistics at
/// least) followed by the per-channel affine map; GroupNormalization with G
/// groups is the same on X viewed as [N, G, C/G x D...], its affine map per
/// channel (version 21) or per group (version 18, scale and bias [G]).
/// torch.onnx writes nn.GroupNorm as a GroupNormalization from opset 21, as
/// an InstanceNormalization on that view with unit scale and zero bias
/// before, which are then left out. The layer norm has a gradient, a
/// lowering and the statistics PyTorch's group norm keeps for backward
/// (mean and inverse deviation per row), so diffusion U-Nets train and run.
struct ExpandGroupNormalization : NodeExpansion {
  ExpandGroupNormalization(MLIRContext *context)
      : NodeExpansion(context,
                      {"InstanceNormalization", "GroupNormalization"}) {}

  LogicalResult expand(ONNXNodeOp node,
                       PatternRewriter &rewriter) const override {
    bool isInstance = node.getOpType() == "InstanceNormalization";
    if (node.getInputs().size() != 3 || node.getOutputs().size() != 1)
      return failure();
    Value x = node.getInputs()[0], scale = node.getInputs()[1],
          bias = node.getInputs()[2];
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    auto scaleType = dyn_cast<RankedTensorType>(scale.getType());
    auto biasType = dyn_cast<RankedTensorType>(bias.getType());
    if (!xType || xType.getRank() < 3 ||
        ShapedType::isDynamic(xType.getDimSize(1)) ||
        !isa<FloatType>(xType.getElementType()) || !scaleType ||
        !scaleType.hasStaticShape() || scaleType.getRank() != 1 ||
        biasType != scaleType || node.getOutputs()[0].getType() != xType)
      return failure();
    int64_t channels = xType.getDimSize(1), groups = channels;
    if (!isInstance) {
      auto attr = node->getAttrOfType<IntegerAttr>("num_groups");
      if (!attr || attr.getInt() < 1 || channels % attr.getInt() != 0)
        return failure();
      groups = attr.getInt();
    }
    int64_t affineSize = scaleType.getDimSize(0);
    bool perGroup = affineSize != channels;
    if (perGroup && affineSize != groups)
      return failure();
    // Grouping reshapes X: its shape must be known.
    if (groups != channels && !xType.hasStaticShape())
      return failure();
    double epsilon = 1e-5;
    if (auto attr = node->getAttrOfType<FloatAttr>("epsilon"))
      epsilon = attr.getValueAsDouble();

    Location loc = node.getLoc();
    Type elementType = xType.getElementType();
    ExpansionBuilder b(rewriter, loc, elementType);
    // The affine map along dim 1 of `y`: scale and bias as [size, 1, ...].
    auto applyAffine = [&](Value y) {
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(y.getType()).getRank() - 1, 1);
      shape[0] = affineSize;
      if (!isSplatOf(scale, 1.0))
        y = b.binary<ONNXMulOp>(y, b.reshape(scale, shape));
      if (!isSplatOf(bias, 0.0))
        y = b.binary<ONNXAddOp>(y, b.reshape(bias, shape));
      return y;
    };

    Value grouped = x;
    if (groups != channels)
      grouped =
          b.reshape(x, {xType.getDimSize(0), groups,
                        xType.getNumElements() / xType.getDimSize(0) / groups});
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
            rewriter, loc, TypeRange{grouped.getType(), noneType, noneType},
            grouped, ones, none, rewriter.getI64IntegerAttr(2),
            rewriter.getF32FloatAttr(epsilon),
            rewriter.getI64IntegerAttr(statisticsType))
            .getY();
    if (perGroup)
      y = applyAffine(y);
    if (groups != channels)
      y = b.reshape(y, xType.getShape());
    if (!perGroup)
      y = applyAffine(y);
    rewriter.replaceOp(node, y);
    return success();
  }
};

/// RMSNormalization (opset 23; torch.onnx's nn.RMSNorm there):
/// X / sqrt(mean(X^2 over the axes from `axis`) + epsilon) * scale, as the
/// exporters spell it at older opsets (Mul, ReduceMean, Add, Sqrt, Div,
/// Mul), in X's element type.
struct ExpandRMSNormalization : NodeExpansion {
  ExpandRMSNormalization(MLIRContext *context)
      : NodeExpansion(context, {"RMSNormalization"}) {}

  LogicalResult expand(ONNXNodeOp node,
                       PatternRewriter &rewriter) const override {
    if (node.getInputs().size() != 2 || node.getOutputs().size() != 1)
      return failure();
    Value x = node.getInputs()[0], scale = node.getInputs()[1];
    auto xType = dyn_cast<RankedTensorType>(x.getType());
    auto scaleType = dyn_cast<RankedTensorType>(scale.getType());
    if (!xType || !isa<FloatType>(xType.getElementType()) || !scaleType ||
        scaleType.getElementType() != xType.getElementType() ||
        node.getOutputs()[0].getType() != xType)
      return failure();
    int64_t rank = xType.getRank(), axis = -1;
    if (auto attr = node->getAttrOfType<IntegerAttr>("axis"))
      axis = attr.getInt();
    if (axis < -rank || axis >= rank)
      return failure();
    if (axis < 0)
      axis += rank;
    // Scale broadcasts within the normalized dims.
    if (scaleType.getRank() > rank - axis ||
        OpTrait::util::getBroadcastedType(xType, scaleType) != xType)
      return failure();
    double epsilon = 1e-5;
    if (auto attr = node->getAttrOfType<FloatAttr>("epsilon"))
      epsilon = attr.getValueAsDouble();
    Location loc = node.getLoc();
    Type elementType = xType.getElementType();
    SmallVector<int64_t> axes, statShape(xType.getShape());
    for (int64_t i = axis; i < rank; ++i) {
      axes.push_back(i);
      statShape[i] = 1;
    }
    auto statType = RankedTensorType::get(statShape, elementType);
    auto scalarType = RankedTensorType::get({}, elementType);
    Value squares = ONNXMulOp::create(rewriter, loc, xType, x, x);
    Value meanSquare = ONNXReduceMeanOp::create(
        rewriter, loc, statType, squares, rewriter.getI64ArrayAttr(axes),
        rewriter.getI64IntegerAttr(1));
    Value eps = ONNXConstantOp::create(
        rewriter, loc, scalarType,
        DenseElementsAttr::get(scalarType,
                               rewriter.getFloatAttr(elementType, epsilon)));
    Value rms = ONNXSqrtOp::create(
        rewriter, loc, statType,
        ONNXAddOp::create(rewriter, loc, statType, meanSquare, eps));
    Value normalized = ONNXDivOp::create(rewriter, loc, xType, x, rms);
    rewriter.replaceOp(
        node,
        ONNXMulOp::create(rewriter, loc, xType, normalized, scale).getResult());
    return success();
  }
};

/// Min and Max of any number of broadcasting operands, as a chain of
/// selections: r = Where(Less(x, r), x, r) for Min (Greater for Max). Exact
/// on integers (T5's relative-position buckets) and on floats but for a NaN
/// in a later operand, which the selection drops where ONNX propagates it.
/// The gradient goes to the selected operand (ties to the earlier one).
struct ExpandMinMax : NodeExpansion {
  ExpandMinMax(MLIRContext *context) : NodeExpansion(context, {"Min", "Max"}) {}

  LogicalResult expand(ONNXNodeOp node,
                       PatternRewriter &rewriter) const override {
    bool isMin = node.getOpType() == "Min";
    if (node.getInputs().empty() || node.getOutputs().size() != 1)
      return failure();
    // The type after each operand; the last must be the node's.
    Type elementType = getElementTypeOrSelf(node.getInputs()[0].getType());
    SmallVector<Type> types;
    for (Value input : node.getInputs()) {
      if (!isa<RankedTensorType>(input.getType()) ||
          getElementTypeOrSelf(input.getType()) != elementType)
        return failure();
      types.push_back(types.empty() ? input.getType()
                                    : OpTrait::util::getBroadcastedType(
                                          types.back(), input.getType()));
      if (!types.back())
        return failure();
    }
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

/// The most steps (sequence x directions) a recurrence is unrolled into:
/// each is about 15 ops.
constexpr int64_t kMaxUnrolledSteps = 4096;

/// Whether a recurrence's `activations` are absent or ONNX's defaults
/// (Sigmoid for the gates, Tanh for the candidate and the output), per
/// direction.
bool hasDefaultActivations(ONNXNodeOp node, bool isLSTM) {
  auto activations = node->getAttrOfType<ArrayAttr>("activations");
  if (!activations)
    return true;
  SmallVector<StringRef> defaults{"Sigmoid", "Tanh"};
  if (isLSTM)
    defaults.push_back("Tanh");
  for (auto [i, activation] : llvm::enumerate(activations)) {
    auto name = dyn_cast<StringAttr>(activation);
    if (!name || name.getValue() != defaults[i % defaults.size()])
      return false;
  }
  return activations.size() % defaults.size() == 0;
}

/// LSTM and GRU unrolled over their (static) sequence into Gemm, Split,
/// Sigmoid, Tanh, Mul and Add per step, so training differentiates them
/// and lowering runs them; what backward keeps is then what cuDNN's reserve
/// space holds, each step's gates. The input projection of every step is
/// one Gemm over [seq x batch, input] (as cuDNN does it), cut per step by one
/// Split. Covered: the default activations, no clip or peepholes, no
/// sequence_lens (every sequence full length), forward, reverse and
/// bidirectional, layout 0 and 1, GRU's linear_before_reset either way; any
/// other form stays an onnx.Node.
struct ExpandRecurrence : NodeExpansion {
  ExpandRecurrence(MLIRContext *context)
      : NodeExpansion(context, {"LSTM", "GRU"}) {}

  LogicalResult expand(ONNXNodeOp node,
                       PatternRewriter &rewriter) const override {
    bool isLSTM = node.getOpType() == "LSTM";
    // Inputs: X, W, R, B, sequence_lens, initial_h (, initial_c, P).
    SmallVector<Value, 8> inputs(node.getInputs());
    inputs.resize(8, Value());
    auto present = [&](unsigned i) {
      return inputs[i] && !isa<NoneType>(inputs[i].getType());
    };
    auto inputForget = node->getAttrOfType<IntegerAttr>("input_forget");
    if (present(4) || (isLSTM && present(7)) || node->getAttr("clip") ||
        (inputForget && inputForget.getInt() != 0) ||
        !hasDefaultActivations(node, isLSTM))
      return failure();
    auto hiddenAttr = node->getAttrOfType<IntegerAttr>("hidden_size");
    auto xType = dyn_cast<RankedTensorType>(inputs[0].getType());
    if (!hiddenAttr || hiddenAttr.getInt() <= 0 ||
        hiddenAttr.getInt() > (int64_t(1) << 40) || !xType ||
        !xType.hasStaticShape() || xType.getRank() != 3 ||
        !isa<FloatType>(xType.getElementType()) || !present(1) || !present(2))
      return failure();
    int64_t hidden = hiddenAttr.getInt();
    StringRef direction = "forward";
    if (auto attr = node->getAttrOfType<StringAttr>("direction"))
      direction = attr.getValue();
    bool batchFirst = false;
    if (auto attr = node->getAttrOfType<IntegerAttr>("layout"))
      batchFirst = attr.getInt() == 1;
    bool linearBeforeReset = false;
    if (auto attr = node->getAttrOfType<IntegerAttr>("linear_before_reset"))
      linearBeforeReset = attr.getInt() != 0;
    int64_t directions = direction == "bidirectional" ? 2 : 1;
    if (direction != "forward" && direction != "reverse" && directions != 2)
      return failure();
    int64_t gates = isLSTM ? 4 : 3;
    ArrayRef<int64_t> xShape = xType.getShape();
    int64_t seq = xShape[batchFirst ? 1 : 0],
            batch = xShape[batchFirst ? 0 : 1], inputSize = xShape[2];
    // Every operand and result has the shape ONNX requires, so the ops
    // built below type-check; a sequence too long to unroll stays a node.
    SmallVector<int64_t> stateShape =
        batchFirst ? SmallVector<int64_t>{batch, directions, hidden}
                   : SmallVector<int64_t>{directions, batch, hidden};
    SmallVector<SmallVector<int64_t>> operandShapes{
        {},
        {directions, gates * hidden, inputSize},
        {directions, gates * hidden, hidden},
        {directions, 2 * gates * hidden},
        {},
        stateShape,
        stateShape};
    auto typeIs = [&](Type type, ArrayRef<int64_t> shape) {
      auto ranked = dyn_cast<RankedTensorType>(type);
      return ranked && ranked.getShape() == shape &&
             ranked.getElementType() == xType.getElementType();
    };
    for (unsigned i = 1; i < operandShapes.size(); ++i)
      if (present(i) && !typeIs(inputs[i].getType(), operandShapes[i]))
        return failure();
    SmallVector<SmallVector<int64_t>> resultShapes{
        batchFirst ? SmallVector<int64_t>{batch, seq, directions, hidden}
                   : SmallVector<int64_t>{seq, directions, batch, hidden},
        stateShape, stateShape};
    if (node.getOutputs().size() > (isLSTM ? 3u : 2u))
      return failure();
    for (auto [result, shape] : llvm::zip(node.getOutputs(), resultShapes))
      if (!isa<NoneType>(result.getType()) && !typeIs(result.getType(), shape))
        return failure();
    if (seq < 1 || batch < 1 || seq * directions > kMaxUnrolledSteps)
      return failure();

    ExpansionBuilder b(rewriter, node.getLoc(), xType.getElementType());
    Value x = batchFirst ? b.transpose(inputs[0], {1, 0, 2}) : inputs[0];
    auto initial = [&](unsigned i, int64_t d) -> Value {
      if (!present(i))
        return b.zeros({batch, hidden});
      Value state = batchFirst ? b.transpose(inputs[i], {1, 0, 2}) : inputs[i];
      return b.reshape(b.slice(state, 0, d, d + 1), {batch, hidden});
    };
    Value rows = b.reshape(x, {seq * batch, inputSize});
    SmallVector<Value> outputs, lastH, lastC;
    for (int64_t d = 0; d < directions; ++d) {
      auto weight = [&](unsigned i, int64_t columns) {
        return b.reshape(b.slice(inputs[i], 0, d, d + 1),
                         {gates * hidden, columns});
      };
      Value w = weight(1, inputSize), r = weight(2, hidden);
      Value wb = b.none(), rb = b.none();
      if (present(3)) {
        Value bias =
            b.reshape(b.slice(inputs[3], 0, d, d + 1), {2 * gates * hidden});
        wb = b.slice(bias, 0, 0, gates * hidden);
        rb = b.slice(bias, 0, gates * hidden, 2 * gates * hidden);
      }
      // Every step's input projection at once, then one piece per step.
      SmallVector<Value> projected = b.split(
          b.reshape(b.linear(rows, w, wb), {seq, batch, gates * hidden}), 0,
          seq);
      Value h = initial(5, d), c = isLSTM ? initial(6, d) : Value();
      // GRU's candidate reads R's last third separately when the reset
      // gate applies before the product.
      Value rzr, rh, rbzr, rbh;
      if (!isLSTM && !linearBeforeReset) {
        rzr = b.slice(r, 0, 0, 2 * hidden);
        rh = b.slice(r, 0, 2 * hidden, 3 * hidden);
        if (present(3)) {
          rbzr = b.slice(rb, 0, 0, 2 * hidden);
          rbh = b.slice(rb, 0, 2 * hidden, 3 * hidden);
        } else {
          rbzr = rbh = b.none();
        }
      }
      SmallVector<Value> steps(seq);
      bool reverse = direction == "reverse" || d == 1;
      for (int64_t i = 0; i < seq; ++i) {
        int64_t t = reverse ? seq - 1 - i : i;
        Value xt = b.reshape(projected[t], {batch, gates * hidden});
        if (isLSTM) {
          // Gates in ONNX's order i, o, f, c.
          SmallVector<Value> g =
              b.split(b.binary<ONNXAddOp>(xt, b.linear(h, r, rb)), 1, gates);
          Value in = b.unary<ONNXSigmoidOp>(g[0]);
          Value out = b.unary<ONNXSigmoidOp>(g[1]);
          Value forget = b.unary<ONNXSigmoidOp>(g[2]);
          Value cell = b.unary<ONNXTanhOp>(g[3]);
          c = b.binary<ONNXAddOp>(b.binary<ONNXMulOp>(forget, c),
                                  b.binary<ONNXMulOp>(in, cell));
          h = b.binary<ONNXMulOp>(out, b.unary<ONNXTanhOp>(c));
        } else {
          // Gates in ONNX's order z, r, h; H = h + z (H_prev - h).
          SmallVector<Value> xg = b.split(xt, 1, 3);
          Value z, reset, candidate;
          if (linearBeforeReset) {
            SmallVector<Value> hg = b.split(b.linear(h, r, rb), 1, 3);
            z = b.unary<ONNXSigmoidOp>(b.binary<ONNXAddOp>(xg[0], hg[0]));
            reset = b.unary<ONNXSigmoidOp>(b.binary<ONNXAddOp>(xg[1], hg[1]));
            candidate = b.binary<ONNXMulOp>(reset, hg[2]);
          } else {
            SmallVector<Value> hg = b.split(b.linear(h, rzr, rbzr), 1, 2);
            z = b.unary<ONNXSigmoidOp>(b.binary<ONNXAddOp>(xg[0], hg[0]));
            reset = b.unary<ONNXSigmoidOp>(b.binary<ONNXAddOp>(xg[1], hg[1]));
            candidate = b.linear(b.binary<ONNXMulOp>(reset, h), rh, rbh);
          }
          Value hNew =
              b.unary<ONNXTanhOp>(b.binary<ONNXAddOp>(xg[2], candidate));
          h = b.binary<ONNXAddOp>(
              hNew, b.binary<ONNXMulOp>(z, b.binary<ONNXSubOp>(h, hNew)));
        }
        steps[t] = b.reshape(h, {1, 1, batch, hidden});
      }
      outputs.push_back(b.concat(steps, 0));
      lastH.push_back(b.reshape(h, {1, batch, hidden}));
      if (isLSTM)
        lastC.push_back(b.reshape(c, {1, batch, hidden}));
    }
    // Y [seq, directions, batch, hidden]; Y_h, Y_c [directions, batch,
    // hidden]; batch first with layout 1.
    auto join = [&](ArrayRef<Value> parts, int64_t axis) {
      return parts.size() == 1 ? parts.front() : b.concat(parts, axis);
    };
    SmallVector<Value> results{join(outputs, 1), join(lastH, 0)};
    if (isLSTM)
      results.push_back(join(lastC, 0));
    if (batchFirst) {
      results[0] = b.transpose(results[0], {2, 0, 1, 3});
      for (Value &state : llvm::drop_begin(results))
        state = b.transpose(state, {1, 0, 2});
    }
    SmallVector<Value> replacements;
    for (auto [result, value] : llvm::zip(node.getOutputs(), results)) {
      if (isa<NoneType>(result.getType()))
        replacements.push_back(nullptr);
      else
        replacements.push_back(value);
    }
    replacements.resize(node.getOutputs().size(), nullptr);
    rewriter.replaceOp(node, replacements);
    return success();
  }
};

/// Attention (opset 23; torch.onnx's scaled_dot_product_attention there) on
/// 4-d Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv]:
/// Softmax((Q sqrt(scale)) (K sqrt(scale))^T + mask) V, as the exporters
/// spell it at older opsets, the scores [B, Hq, Sq, Skv] materialised (no
/// fused kernel); K and V repeated per query head group when Hkv < Hq
/// (grouped-query attention).
/// is_causal masks the upper triangle (upper-left aligned); a boolean mask
/// keeps where true, a float one is added. Past keys and values, softcap,
/// 3-d inputs and the extra outputs stay an onnx.Node.
struct ExpandAttention : NodeExpansion {
  ExpandAttention(MLIRContext *context)
      : NodeExpansion(context, {"Attention"}) {}

  LogicalResult expand(ONNXNodeOp node,
                       PatternRewriter &rewriter) const override {
    if (node.getInputs().size() < 3 || node.getInputs().size() > 4)
      return failure();
    for (Value extra : llvm::drop_begin(node.getOutputs()))
      if (!isa<NoneType>(extra.getType()) && !extra.use_empty())
        return failure();
    auto typeOf = [&](unsigned i) {
      return dyn_cast<RankedTensorType>(node.getInputs()[i].getType());
    };
    RankedTensorType qType = typeOf(0), kType = typeOf(1), vType = typeOf(2);
    if (!qType || !kType || !vType || !qType.hasStaticShape() ||
        !kType.hasStaticShape() || !vType.hasStaticShape() ||
        qType.getRank() != 4 || kType.getRank() != 4 || vType.getRank() != 4 ||
        !isa<FloatType>(qType.getElementType()) ||
        kType.getElementType() != qType.getElementType() ||
        vType.getElementType() != qType.getElementType())
      return failure();
    // Attributes of later versions (sliding windows, ...) change the
    // result: only the known ones, at values the expansion computes.
    for (NamedAttribute attr : node->getAttrs()) {
      StringRef name = attr.getName();
      if (name == "op_type" || name == "domain" || name == "is_causal" ||
          name == "scale" || name == "q_num_heads" || name == "kv_num_heads" ||
          name == "softmax_precision")
        continue;
      auto value = dyn_cast<IntegerAttr>(attr.getValue());
      auto floatValue = dyn_cast<FloatAttr>(attr.getValue());
      bool zero = (value && value.getInt() == 0) ||
                  (floatValue && floatValue.getValueAsDouble() == 0);
      if (!zero || (name != "softcap" && name != "qk_matmul_output_mode"))
        return failure();
    }
    ArrayRef<int64_t> q = qType.getShape(), k = kType.getShape(),
                      v = vType.getShape();
    int64_t batch = q[0], heads = q[1], querySeq = q[2], depth = q[3];
    int64_t kvHeads = k[1], kvSeq = k[2];
    if (k[0] != batch || v[0] != batch || k[3] != depth || v[1] != kvHeads ||
        v[2] != kvSeq || kvHeads < 1 || heads % kvHeads != 0)
      return failure();
    Type elementType = qType.getElementType();
    auto resultType =
        RankedTensorType::get({batch, heads, querySeq, v[3]}, elementType);
    if (node.getOutputs()[0].getType() != resultType)
      return failure();
    auto scoresType =
        RankedTensorType::get({batch, heads, querySeq, kvSeq}, elementType);
    Value mask;
    if (node.getInputs().size() == 4 &&
        !isa<NoneType>(node.getInputs()[3].getType())) {
      mask = node.getInputs()[3];
      auto maskType = dyn_cast<RankedTensorType>(mask.getType());
      if (!maskType ||
          (!maskType.getElementType().isInteger(1) &&
           maskType.getElementType() != elementType) ||
          OpTrait::util::getBroadcastedType(scoresType, maskType,
                                            elementType) != scoresType)
        return failure();
    }
    double scale = 1.0 / std::sqrt(double(depth));
    if (auto attr = node->getAttrOfType<FloatAttr>("scale"))
      scale = attr.getValueAsDouble();
    bool causal = false;
    if (auto attr = node->getAttrOfType<IntegerAttr>("is_causal"))
      causal = attr.getInt() != 0;

    Location loc = node.getLoc();
    auto scalar = [&](double value) -> Value {
      auto type = RankedTensorType::get({}, elementType);
      return ONNXConstantOp::create(
          rewriter, loc, type,
          DenseElementsAttr::get(type,
                                 rewriter.getFloatAttr(elementType, value)));
    };
    // K and V with one head per query head.
    auto perQueryHead = [&](Value value) -> Value {
      auto type = cast<RankedTensorType>(value.getType());
      if (kvHeads == heads)
        return value;
      int64_t group = heads / kvHeads, seq = type.getDimSize(2),
              width = type.getDimSize(3);
      ExpansionBuilder b(rewriter, loc, elementType);
      Value split = b.reshape(value, {batch, kvHeads, 1, seq, width});
      SmallVector<int64_t> repeatedShape{batch, kvHeads, group, seq, width};
      Value repeated = ONNXExpandOp::create(
          rewriter, loc, b.type(repeatedShape), split,
          ONNXConstantOp::create(rewriter, loc, repeatedShape));
      return b.reshape(repeated, {batch, heads, seq, width});
    };
    // Q and K each scaled by sqrt(scale), as ONNX's reference and
    // PyTorch's math attention do: in 16-bit types the rounding is theirs.
    Value rootScale = scalar(std::sqrt(scale));
    Value keys = perQueryHead(ONNXMulOp::create(
        rewriter, loc, kType, node.getInputs()[1], rootScale));
    Value values = perQueryHead(node.getInputs()[2]);
    Value scaled =
        ONNXMulOp::create(rewriter, loc, qType, node.getInputs()[0], rootScale);
    Value keysT = ONNXTransposeOp::create(
        rewriter, loc,
        RankedTensorType::get({batch, heads, depth, kvSeq}, elementType), keys,
        rewriter.getI64ArrayAttr({0, 1, 3, 2}));
    Value scores =
        ONNXMatMulOp::create(rewriter, loc, scoresType, scaled, keysT);
    const llvm::fltSemantics &semantics =
        cast<FloatType>(elementType).getFloatSemantics();
    if (causal) {
      // 0 where key j <= query i, -inf above the diagonal.
      auto biasType = RankedTensorType::get({querySeq, kvSeq}, elementType);
      SmallVector<APFloat> bias;
      for (int64_t i = 0; i < querySeq; ++i)
        for (int64_t j = 0; j < kvSeq; ++j)
          bias.push_back(j <= i
                             ? APFloat::getZero(semantics)
                             : APFloat::getInf(semantics, /*Negative=*/true));
      scores = ONNXAddOp::create(
          rewriter, loc, scoresType, scores,
          ONNXConstantOp::create(rewriter, loc, biasType,
                                 DenseElementsAttr::get(biasType, bias)));
    }
    bool booleanMask =
        mask && getElementTypeOrSelf(mask.getType()).isInteger(1);
    if (booleanMask) {
      // Masked scores take the lowest finite value, not -inf: a row masked
      // entirely (with the causal bias, too) then has a finite softmax,
      // which the mask sets to 0 afterwards, as ONNX specifies, with no NaN
      // in the values or the gradient.
      auto scalarType = RankedTensorType::get({}, elementType);
      Value lowest = ONNXConstantOp::create(
          rewriter, loc, scalarType,
          DenseElementsAttr::get(
              scalarType, APFloat::getLargest(semantics, /*Negative=*/true)));
      scores =
          ONNXWhereOp::create(rewriter, loc, scoresType, mask, scores, lowest);
    } else if (mask) {
      scores = ONNXAddOp::create(rewriter, loc, scoresType, scores, mask);
    }
    Value probabilities = ONNXSoftmaxOp::create(
        rewriter, loc, scoresType, scores, rewriter.getI64IntegerAttr(-1));
    if (booleanMask)
      probabilities = ONNXWhereOp::create(rewriter, loc, scoresType, mask,
                                          probabilities, scalar(0.0));
    Value y =
        ONNXMatMulOp::create(rewriter, loc, resultType, probabilities, values);
    SmallVector<Value> replacements(node.getOutputs().size(), nullptr);
    replacements[0] = y;
    rewriter.replaceOp(node, replacements);
    return success();
  }
};

} // namespace

void populateGenericNodeExpansionPatterns(RewritePatternSet &patterns) {
  patterns.add<ExpandGroupNormalization, ExpandRMSNormalization,
               ExpandAttention, ExpandMinMax, ExpandRecurrence>(
      patterns.getContext());
}

} // namespace vram
