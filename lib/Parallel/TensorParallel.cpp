//===- TensorParallel.cpp - Megatron-style tensor parallelism -------------===//
//
// Splits the paired linear layers of a model's forward pass among the ranks
// of the grid's tensor axis, as Megatron-LM does (Shoeybi et al. 2019): the
// first layer of a pair by columns (each rank computes its part of the
// features: its attention heads, its slice of the MLP's hidden layer), the
// second by rows (each rank multiplies its part of the features by its rows
// of the weight, and an all-reduce <sum> adds the ranks' partial results).
// Everything between the two runs on each rank's part; everything else is
// replicated. vram-train then derives the backward pass, in which the input
// of a column layer needs the all-reduce (vram.tensor_parallel_copy's
// gradient) and the sum needs none.
//
// The pairs are found, not named. Each MatMul whose right operand is a 2-d
// trainable parameter could end a pair: its left operand is assumed split
// along its last axis, and that split is propagated, through the ops that
// preserve it, to every value it reaches (forward and backward, to a fixed
// point), until each path ends at a MatMul with a parameter weight whose
// result is split along its last axis (a column layer, whose input stays
// replicated), a parameter that is sliced with the values it meets (a bias),
// or an operand broadcast along the split axis (a mask). A path that
// reaches anything else (a normalization over the split axis, the
// function's result, an input) leaves the candidate whole. A split records
// its layout (Split): a fused QKV projection's output is three parts, each
// divided among the ranks, so each rank holds the Q, K and V of its heads.
//
//===----------------------------------------------------------------------===//

#include "RankGrid.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Parallel/Parallelize.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>
#include <numeric>

using namespace mlir;

namespace vram {
namespace {

/// How a value is split among the ranks: along `axis`, whose whole extent
/// is the concatenation of `parts`; a rank holds its chunk (1/ranks, the
/// rank-th) of every part.
struct Split {
  int64_t axis;
  SmallVector<int64_t> parts;

  bool operator==(const Split &other) const {
    return axis == other.axis && parts == other.parts;
  }
  Split on(int64_t otherAxis) const { return {otherAxis, parts}; }
};

/// The parameter or buffer (`vram.param`) a value is, if it is one.
BlockArgument getParameter(Value value,
                           std::optional<ParamKind> only = std::nullopt) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return nullptr;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  std::optional<ParamKind> kind =
      func ? getParamKind(func, arg.getArgNumber()) : std::nullopt;
  return kind && (!only || kind == only) ? arg : nullptr;
}

/// The trainable parameter a value is, if it is one: the weights of linear
/// layers.
BlockArgument getTrainableParameter(Value value) {
  return getParameter(value, ParamKind::Trainable);
}

RankedTensorType getStaticType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type : nullptr;
}

/// `axis` of a tensor of `rank` counted from the front. ONNX's I64Attr
/// getters return the bits unsigned: callers pass them as they are.
int64_t nonNegativeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// One candidate pair (or group: an MLP's gate and up projections, a
/// layer's Q, K and V) of column layers and the row layer(s) after them.
class Region {
public:
  explicit Region(int64_t ranks) : ranks(ranks) {}

  /// Propagates `seed` from `value` to a fixed point; false if the split
  /// cannot be carried through everything it reaches.
  bool grow(Value value, const Split &seed);

  int64_t ranks;
  llvm::MapVector<Value, Split> splits;
  llvm::MapVector<BlockArgument, Split> parameters;
  llvm::SetVector<Operation *> ops, columns, rows;

private:
  bool assign(Value value, const Split &split);
  bool sliceParameter(BlockArgument param, const Split &split);
  bool visit(Operation *op);
  bool visitMatMul(ONNXMatMulOp op);
  bool visitGemm(ONNXGemmOp op);
  bool visitBroadcast(Operation *op);
  bool visitReshape(ONNXReshapeOp op);
  bool visitSplit(ONNXSplitOp op);
  bool visitSameSplit(Operation *op);
  std::optional<Split> known(Value value) const {
    auto it = splits.find(value);
    return it == splits.end() ? std::nullopt : std::optional(it->second);
  }

  SmallVector<Value> worklist;
};

bool Region::assign(Value value, const Split &split) {
  if (auto it = splits.find(value); it != splits.end())
    return it->second == split;
  RankedTensorType type = getStaticType(value);
  if (!type || split.axis < 0 || split.axis >= type.getRank() ||
      llvm::sum_of(split.parts) != type.getDimSize(split.axis) ||
      llvm::any_of(split.parts, [&](int64_t p) { return p % ranks != 0; }))
    return false;
  // A parameter or buffer is sliced (a bias, a relative position table);
  // an input is the same on every rank.
  if (isa<BlockArgument>(value)) {
    BlockArgument param = getParameter(value);
    return param && sliceParameter(param, split);
  }
  splits.insert({value, split});
  worklist.push_back(value);
  return true;
}

bool Region::sliceParameter(BlockArgument param, const Split &split) {
  // The split's parts divide among the ranks: they were checked where the
  // split was assigned to the value the parameter is sliced with.
  if (!getStaticType(param))
    return false;
  auto [it, inserted] = parameters.insert({param, split});
  return inserted || it->second == split;
}

bool Region::grow(Value value, const Split &seed) {
  if (!assign(value, seed))
    return false;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    SmallVector<Operation *> touching(current.getUsers());
    if (Operation *producer = current.getDefiningOp())
      touching.push_back(producer);
    for (Operation *op : touching) {
      if (!visit(op))
        return false;
      ops.insert(op);
    }
  }
  return !columns.empty() && !rows.empty();
}

bool Region::visit(Operation *op) {
  if (auto matmul = dyn_cast<ONNXMatMulOp>(op))
    return visitMatMul(matmul);
  if (auto gemm = dyn_cast<ONNXGemmOp>(op))
    return visitGemm(gemm);
  if (auto reshape = dyn_cast<ONNXReshapeOp>(op))
    return visitReshape(reshape);
  if (auto split = dyn_cast<ONNXSplitOp>(op))
    return visitSplit(split);
  if (op->hasTrait<OpTrait::ResultsBroadcastableShape>() ||
      isa<ONNXWhereOp>(op))
    return visitBroadcast(op);
  return visitSameSplit(op);
}

/// A column layer (result split along its last axis, input replicated), a
/// row layer (input split along the contraction axis, result a partial
/// sum), or a batched product split along a batch axis (attention's heads).
bool Region::visitMatMul(ONNXMatMulOp op) {
  Value a = op.getA(), b = op.getB(), y = op.getY();
  RankedTensorType aType = getStaticType(a), yType = getStaticType(y);
  if (!aType || !yType || aType.getRank() < 2)
    return false;
  int64_t last = yType.getRank() - 1;
  std::optional<Split> aSplit = known(a), ySplit = known(y);
  if (BlockArgument weight = getTrainableParameter(b)) {
    if (cast<RankedTensorType>(weight.getType()).getRank() != 2)
      return false;
    if (ySplit && !aSplit && ySplit->axis == last) {
      columns.insert(op);
      return sliceParameter(weight, ySplit->on(1));
    }
    if (aSplit && !ySplit && aSplit->axis == aType.getRank() - 1) {
      rows.insert(op);
      return sliceParameter(weight, aSplit->on(0));
    }
    return false;
  }
  // Both operands computed: split along a batch axis of the result, which
  // both operands have whole (right-aligned, not broadcast).
  RankedTensorType bType = getStaticType(b);
  if (!bType || bType.getRank() < 2)
    return false;
  auto offsetOf = [&](RankedTensorType t) {
    return yType.getRank() - t.getRank();
  };
  std::optional<Split> axis = ySplit;
  if (!axis && aSplit)
    axis = aSplit->on(aSplit->axis + offsetOf(aType));
  if (!axis)
    if (std::optional<Split> bSplit = known(b))
      axis = bSplit->on(bSplit->axis + offsetOf(bType));
  if (!axis || axis->axis >= last - 1)
    return false;
  for (auto [operand, type] : {std::pair(a, aType), std::pair(b, bType)}) {
    int64_t operandAxis = axis->axis - offsetOf(type);
    if (operandAxis < 0 ||
        type.getDimSize(operandAxis) != yType.getDimSize(axis->axis) ||
        !assign(operand, axis->on(operandAxis)))
      return false;
  }
  return assign(y, *axis);
}

/// nn.Linear exported as a Gemm (2-d input, transB = 1 for PyTorch's
/// weight layout): a column layer (its bias sliced with the features) or a
/// row layer (its bias, if any, added after the sum: commit moves it).
bool Region::visitGemm(ONNXGemmOp op) {
  BlockArgument weight = getTrainableParameter(op.getB());
  if (!weight || op.getTransA() != 0 || op.getAlpha().convertToDouble() != 1 ||
      op.getBeta().convertToDouble() != 1)
    return false;
  int64_t features = op.getTransB() ? 0 : 1, inputs = 1 - features;
  std::optional<Split> aSplit = known(op.getA()), ySplit = known(op.getY());
  Value bias = op.getC();
  bool hasBias = bias && !isa<NoneType>(bias.getType());
  if (ySplit && !aSplit && ySplit->axis == 1) {
    columns.insert(op);
    if (hasBias) {
      BlockArgument biasParam = getTrainableParameter(bias);
      auto biasType = dyn_cast<RankedTensorType>(bias.getType());
      if (!biasParam || !biasType || biasType.getRank() != 1 ||
          !sliceParameter(biasParam, ySplit->on(0)))
        return false;
    }
    return sliceParameter(weight, ySplit->on(features));
  }
  if (aSplit && !ySplit && aSplit->axis == 1) {
    rows.insert(op);
    return sliceParameter(weight, aSplit->on(inputs));
  }
  return false;
}

/// Elementwise ops with broadcasting: operands that have the split axis
/// whole are split alike (a parameter is sliced: a bias); operands
/// broadcast along it (a mask over all heads, a scalar) stay replicated.
bool Region::visitBroadcast(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  Value result = op->getResult(0);
  RankedTensorType type = getStaticType(result);
  if (!type)
    return false;
  std::optional<Split> split = known(result);
  for (Value operand : op->getOperands()) {
    std::optional<Split> operandSplit = known(operand);
    if (!split && operandSplit)
      split =
          operandSplit->on(operandSplit->axis + type.getRank() -
                           cast<RankedTensorType>(operand.getType()).getRank());
  }
  if (!split || !assign(result, *split))
    return false;
  for (Value operand : op->getOperands()) {
    RankedTensorType operandType = getStaticType(operand);
    if (!operandType)
      return false;
    int64_t axis = split->axis - (type.getRank() - operandType.getRank());
    if (axis < 0 || operandType.getDimSize(axis) == 1)
      continue;
    if (!assign(operand, split->on(axis)))
      return false;
  }
  return true;
}

/// The split axis of `from` (dims of one side of a reshape) on the other
/// side `to`. Within the group of dims that reshape into each other, the
/// split is written flat: the group's elements in `parts`, each of which
/// the rank holds its chunk of (the split axis' parts times the dims after
/// it, repeated for every index of the dims before it: heads merged with
/// the batch are one part per sample). On the other side, the split axis
/// is the first dim whose outer dims repeat those parts evenly and whose
/// chunks stay whole rows of the dims after it.
std::optional<Split> reshapeSplit(ArrayRef<int64_t> from, ArrayRef<int64_t> to,
                                  const Split &split, int64_t ranks) {
  // The group of dims around the split axis: equal products on both sides.
  int64_t i = 0, j = 0, fromProduct = 1, toProduct = 1;
  int64_t groupFrom = 0, groupTo = 0;
  while (i < int64_t(from.size()) || j < int64_t(to.size())) {
    if (fromProduct == toProduct && i > split.axis)
      break;
    if (fromProduct == toProduct) {
      groupFrom = i;
      groupTo = j;
    }
    if (fromProduct <= toProduct && i < int64_t(from.size()))
      fromProduct *= from[i++];
    else if (j < int64_t(to.size()))
      toProduct *= to[j++];
    else
      return std::nullopt;
  }
  int64_t groupToEnd = j;
  int64_t outer = 1, inner = 1;
  for (int64_t k = groupFrom; k < split.axis; ++k)
    outer *= from[k];
  for (int64_t k = split.axis + 1; k < i; ++k)
    inner *= from[k];
  SmallVector<int64_t> flat;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t part : split.parts)
      flat.push_back(part * inner);
  int64_t toOuter = 1;
  for (int64_t axis = groupTo; axis < groupToEnd; toOuter *= to[axis++]) {
    if (to[axis] == 1 || int64_t(flat.size()) % toOuter != 0)
      continue;
    int64_t toInner = 1;
    for (int64_t k = axis + 1; k < groupToEnd; ++k)
      toInner *= to[k];
    // The parts of one index of the outer dims, the same for every index.
    size_t period = flat.size() / toOuter;
    ArrayRef<int64_t> first = ArrayRef(flat).take_front(period);
    bool periodic = true;
    for (size_t k = period; k < flat.size(); ++k)
      periodic &= flat[k] == first[k % period];
    if (!periodic || llvm::sum_of(first) != to[axis] * toInner ||
        llvm::any_of(
            first, [&](int64_t part) { return part % (toInner * ranks) != 0; }))
      continue;
    Split result{axis, {}};
    for (int64_t part : first)
      result.parts.push_back(part / toInner);
    return result;
  }
  return std::nullopt;
}

bool Region::visitReshape(ONNXReshapeOp op) {
  RankedTensorType in = getStaticType(op.getData()),
                   out = getStaticType(op.getReshaped());
  if (!in || !out)
    return false;
  if (std::optional<Split> split = known(op.getData())) {
    std::optional<Split> mapped =
        reshapeSplit(in.getShape(), out.getShape(), *split, ranks);
    return mapped && assign(op.getReshaped(), *mapped);
  }
  std::optional<Split> split = known(op.getReshaped());
  std::optional<Split> mapped =
      split ? reshapeSplit(out.getShape(), in.getShape(), *split, ranks)
            : std::nullopt;
  return mapped && assign(op.getData(), *mapped);
}

/// Along another axis, every output is split as the input. Along the split
/// axis, the input's parts are its outputs' (each output, unless known
/// otherwise, split as one part).
bool Region::visitSplit(ONNXSplitOp op) {
  RankedTensorType in = getStaticType(op.getInput());
  if (!in)
    return false;
  int64_t axis = nonNegativeAxis(op.getAxis(), in.getRank());
  std::optional<Split> inSplit = known(op.getInput());
  std::optional<int64_t> splitAxis;
  if (inSplit)
    splitAxis = inSplit->axis;
  for (Value output : op.getOutputs())
    if (std::optional<Split> s = known(output))
      splitAxis = s->axis;
  if (!splitAxis)
    return false;
  if (*splitAxis != axis) {
    Split same = inSplit ? *inSplit
                         : *known(*llvm::find_if(op.getOutputs(), [&](Value v) {
                             return known(v).has_value();
                           }));
    if (!assign(op.getInput(), same))
      return false;
    for (Value output : op.getOutputs())
      if (!assign(output, same))
        return false;
    return true;
  }
  if (inSplit && !llvm::all_of(op.getOutputs(),
                               [&](Value v) { return known(v).has_value(); })) {
    // From the input: each output takes the parts within its extent.
    size_t part = 0;
    for (Value output : op.getOutputs()) {
      RankedTensorType type = getStaticType(output);
      if (!type)
        return false;
      Split outSplit{axis, {}};
      int64_t covered = 0;
      while (covered < type.getDimSize(axis) && part < inSplit->parts.size())
        covered += outSplit.parts.emplace_back(inSplit->parts[part++]);
      if (covered != type.getDimSize(axis) || !assign(output, outSplit))
        return false;
    }
    return true;
  }
  Split whole{axis, {}};
  for (Value output : op.getOutputs()) {
    RankedTensorType type = getStaticType(output);
    if (!type)
      return false;
    std::optional<Split> s = known(output);
    Split outSplit = s ? *s : Split{axis, {type.getDimSize(axis)}};
    if (!assign(output, outSplit))
      return false;
    llvm::append_range(whole.parts, outSplit.parts);
  }
  return assign(op.getInput(), whole);
}

/// Ops whose operand and result are split alike: elementwise math,
/// softmax over another axis, transposes (the axis moves), concatenation
/// and slicing along other axes.
bool Region::visitSameSplit(Operation *op) {
  auto propagate = [&](Value in, Value out, auto inToOut, auto outToIn) {
    if (std::optional<Split> s = known(in)) {
      std::optional<int64_t> axis = inToOut(s->axis);
      return axis && assign(in, *s) && assign(out, s->on(*axis));
    }
    if (std::optional<Split> s = known(out)) {
      std::optional<int64_t> axis = outToIn(s->axis);
      return axis && assign(in, s->on(*axis));
    }
    return false;
  };
  auto identity = [](int64_t axis) -> std::optional<int64_t> { return axis; };
  // Broadcasting along other axes (grouped-query attention's K and V
  // repeated for the query heads of each).
  if (auto expand = dyn_cast<ONNXExpandOp>(op)) {
    RankedTensorType in = getStaticType(expand.getInput()),
                     out = getStaticType(expand.getOutput());
    if (!in || !out)
      return false;
    int64_t offset = out.getRank() - in.getRank();
    return propagate(
        expand.getInput(), expand.getOutput(),
        [&](int64_t axis) -> std::optional<int64_t> { return axis + offset; },
        [&](int64_t axis) -> std::optional<int64_t> {
          if (axis < offset ||
              in.getDimSize(axis - offset) != out.getDimSize(axis))
            return std::nullopt;
          return axis - offset;
        });
  }
  // Dropout: the output and its mask split as the data (each rank draws
  // the mask of its part, as Megatron's per-rank RNG does).
  if (auto dropout = dyn_cast<ONNXDropoutOp>(op)) {
    Value mask = dropout.getMask();
    bool hasMask = !isa<NoneType>(mask.getType());
    if (hasMask)
      if (std::optional<Split> s = known(mask))
        if (!assign(dropout.getData(), *s))
          return false;
    if (!propagate(dropout.getData(), dropout.getOutput(), identity, identity))
      return false;
    return !hasMask || assign(mask, *known(dropout.getData()));
  }
  // Unit dims inserted or removed at constant `axes` (of the side with
  // them): the split axis moves past them.
  if (isa<ONNXUnsqueezeOp, ONNXSqueezeOp>(op)) {
    bool inserts = isa<ONNXUnsqueezeOp>(op);
    Value in = op->getOperand(0), out = op->getResult(0);
    RankedTensorType withUnits = getStaticType(inserts ? out : in);
    std::optional<SmallVector<int64_t>> axes =
        getConstantInts(op->getOperand(1));
    if (!withUnits || !axes)
      return false;
    SmallVector<int64_t> kept; // per axis of the side without the units
    for (int64_t axis = 0; axis < withUnits.getRank(); ++axis)
      if (llvm::none_of(*axes, [&](int64_t unit) {
            return nonNegativeAxis(unit, withUnits.getRank()) == axis;
          }))
        kept.push_back(axis);
    auto toUnits = [&](int64_t axis) -> std::optional<int64_t> {
      return kept[axis];
    };
    auto fromUnits = [&](int64_t axis) -> std::optional<int64_t> {
      auto it = llvm::find(kept, axis);
      if (it == kept.end())
        return std::nullopt;
      return it - kept.begin();
    };
    return inserts ? propagate(in, out, toUnits, fromUnits)
                   : propagate(in, out, fromUnits, toUnits);
  }
  // Selecting along another axis (the Q, K and V of nn.MultiheadAttention's
  // packed projection; a relative position table's rows): the indices,
  // never split, are the same on every rank.
  if (auto gather = dyn_cast<ONNXGatherOp>(op)) {
    RankedTensorType data = getStaticType(gather.getData()),
                     indices = getStaticType(gather.getIndices());
    if (!data || !indices || known(gather.getIndices()))
      return false;
    int64_t gathered = nonNegativeAxis(gather.getAxis(), data.getRank());
    int64_t added = indices.getRank() - 1;
    return propagate(
        gather.getData(), gather.getOutput(),
        [&](int64_t axis) -> std::optional<int64_t> {
          if (axis == gathered)
            return std::nullopt;
          return axis < gathered ? axis : axis + added;
        },
        [&](int64_t axis) -> std::optional<int64_t> {
          if (axis < gathered)
            return axis;
          if (axis <= gathered + added)
            return std::nullopt;
          return axis - added;
        });
  }
  // Slicing along other axes (rotary embeddings' halves of a head).
  if (auto slice = dyn_cast<ONNXSliceOp>(op)) {
    RankedTensorType type = getStaticType(slice.getData());
    std::optional<SmallVector<int64_t>> axes = getConstantInts(slice.getAxes());
    if (!type || !axes)
      return false;
    auto unsliced = [&](int64_t axis) -> std::optional<int64_t> {
      for (int64_t sliced : *axes)
        if (nonNegativeAxis(sliced, type.getRank()) == axis)
          return std::nullopt;
      return axis;
    };
    return propagate(slice.getData(), slice.getOutput(), unsliced, unsliced);
  }
  // Concatenation along another axis: every input split alike.
  if (auto concat = dyn_cast<ONNXConcatOp>(op)) {
    Value result = concat.getConcatResult();
    RankedTensorType type = getStaticType(result);
    if (!type)
      return false;
    int64_t axis = nonNegativeAxis(concat.getAxis(), type.getRank());
    std::optional<Split> split = known(result);
    for (Value input : concat.getInputs())
      if (!split)
        split = known(input);
    if (!split || split->axis == axis || !assign(result, *split))
      return false;
    return llvm::all_of(concat.getInputs(),
                        [&](Value input) { return assign(input, *split); });
  }
  if (auto transpose = dyn_cast<ONNXTransposeOp>(op)) {
    RankedTensorType type = getStaticType(transpose.getData());
    if (!type)
      return false;
    SmallVector<int64_t> perm(type.getRank());
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (transpose.getPerm())
      perm = llvm::to_vector(
          llvm::map_range(*transpose.getPerm(), [](Attribute a) {
            return cast<IntegerAttr>(a).getInt();
          }));
    return propagate(
        transpose.getData(), transpose.getTransposed(),
        [&](int64_t axis) -> std::optional<int64_t> {
          return llvm::find(perm, axis) - perm.begin();
        },
        [&](int64_t axis) -> std::optional<int64_t> { return perm[axis]; });
  }
  // Softmax and LogSoftmax normalize along `axis`: not the split one.
  if (isa<ONNXSoftmaxOp, ONNXLogSoftmaxOp>(op)) {
    int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    int64_t axis = nonNegativeAxis(isa<ONNXSoftmaxOp>(op)
                                       ? cast<ONNXSoftmaxOp>(op).getAxis()
                                       : cast<ONNXLogSoftmaxOp>(op).getAxis(),
                                   rank);
    auto notNormalized = [axis](int64_t split) -> std::optional<int64_t> {
      if (split == axis)
        return std::nullopt;
      return split;
    };
    return propagate(op->getOperand(0), op->getResult(0), notNormalized,
                     notNormalized);
  }
  // Elementwise math of one operand (activations, casts): no axis, no
  // other operand.
  if (isUnaryElementwise(op))
    return propagate(op->getOperand(0), op->getResult(0), identity, identity);
  return false;
}

/// Turns the found regions into each rank's part.
class TensorParallelRewriter {
public:
  TensorParallelRewriter(func::FuncOp func, int64_t ranks)
      : func(func), ranks(ranks), context(func.getContext()),
        tensorAxis(context, VramDialect::kTensorAxis) {}

  LogicalResult run();

private:
  void commit(const Region &region);
  RankedTensorType localType(Value value, const Split &split) const;
  Value copyForRanks(Value input);
  Value constantInts(Operation *before, ArrayRef<int64_t> values);

  func::FuncOp func;
  int64_t ranks;
  MLIRContext *context;
  RankGridAxis tensorAxis;
  DenseMap<Value, Value> copies;
  DenseSet<BlockArgument> slicedParameters;
};

} // namespace

RankedTensorType TensorParallelRewriter::localType(Value value,
                                                   const Split &split) const {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[split.axis] /= ranks;
  return type.clone(shape);
}

Value TensorParallelRewriter::constantInts(Operation *before,
                                           ArrayRef<int64_t> values) {
  OpBuilder builder(before);
  return ONNXConstantOp::create(builder, before->getLoc(), values);
}

/// The replicated input of the column layers, through one copy per input
/// (their gradients add up before the one all-reduce).
Value TensorParallelRewriter::copyForRanks(Value input) {
  Value &copy = copies[input];
  if (copy)
    return copy;
  OpBuilder builder(context);
  if (Operation *producer = input.getDefiningOp())
    builder.setInsertionPointAfter(producer);
  else
    builder.setInsertionPointToStart(&func.front());
  copy = TensorParallelCopyOp::create(builder, input.getLoc(), input.getType(),
                                      input, tensorAxis.grid, tensorAxis.axes);
  return copy;
}

void TensorParallelRewriter::commit(const Region &region) {
  for (auto [value, split] : region.splits)
    value.setType(localType(value, split));
  for (auto [param, split] : region.parameters) {
    // Shared by regions (dropRegionsOfPartlySlicedParameters): once.
    if (!slicedParameters.insert(param).second)
      continue;
    auto whole = cast<RankedTensorType>(param.getType());
    param.setType(localType(param, split));
    func.setArgAttr(
        param.getArgNumber(), VramDialect::kTensorSliceOfAttrName,
        DictionaryAttr::get(
            context,
            {NamedAttribute(StringAttr::get(context, "type"),
                            TypeAttr::get(whole)),
             NamedAttribute(
                 StringAttr::get(context, "axis"),
                 IntegerAttr::get(IntegerType::get(context, 64), split.axis)),
             NamedAttribute(StringAttr::get(context, "parts"),
                            DenseI64ArrayAttr::get(context, split.parts))}));
  }
  for (Operation *op : region.ops) {
    if (auto reshape = dyn_cast<ONNXReshapeOp>(op))
      reshape.getShapeMutable().set(constantInts(
          op, cast<RankedTensorType>(reshape.getType()).getShape()));
    if (auto split = dyn_cast<ONNXSplitOp>(op);
        split && split.getSplit() &&
        !isa<NoneType>(split.getSplit().getType())) {
      auto sizes = llvm::map_to_vector(split.getOutputs(), [&](Value v) {
        auto type = cast<RankedTensorType>(v.getType());
        return type.getDimSize(
            nonNegativeAxis(split.getAxis(), type.getRank()));
      });
      split.getSplitMutable().assign(constantInts(op, sizes));
    }
  }
  for (Operation *op : region.columns)
    op->setOperand(0, copyForRanks(op->getOperand(0)));
  for (Operation *op : region.rows) {
    OpBuilder builder(context);
    builder.setInsertionPointAfter(op);
    Value partial = op->getResult(0);
    auto sum = shard::AllReduceOp::create(
        builder, op->getLoc(), partial.getType(), tensorAxis.grid,
        tensorAxis.axes, partial,
        shard::ReductionKindAttr::get(context, shard::ReductionKind::Sum));
    Value result = sum;
    // Each rank would add a Gemm's bias to its partial sum: added once,
    // after it.
    if (auto gemm = dyn_cast<ONNXGemmOp>(op);
        gemm && !isa<NoneType>(gemm.getC().getType())) {
      Value bias = gemm.getC();
      OpBuilder before(op);
      gemm.getCMutable().assign(ONNXNoValueOp::create(before, op->getLoc()));
      result = ONNXAddOp::create(builder, op->getLoc(), partial.getType(), sum,
                                 bias);
    }
    partial.replaceAllUsesExcept(result, sum);
  }
}

/// A parameter is sliced for all its uses, alike, or not at all: drops the
/// regions that slice one that another use (outside any region, or in a
/// region that slices it otherwise) reads whole, until none does. Exporters
/// share one initializer among layers whose initial values are equal
/// (PyTorch's dynamo export of nn.TransformerEncoder's copied layers): its
/// uses are then in several regions.
static void dropRegionsOfPartlySlicedParameters(std::vector<Region> &regions) {
  bool dropped = true;
  while (dropped) {
    dropped = false;
    DenseMap<BlockArgument, std::optional<Split>> sliceOf;
    DenseSet<Operation *> slicedUsers;
    for (const Region &region : regions)
      for (auto [param, split] : region.parameters) {
        auto [it, inserted] = sliceOf.try_emplace(param, split);
        if (!inserted && it->second && !(*it->second == split))
          it->second = std::nullopt;
        for (Operation *user : param.getUsers())
          if (region.ops.contains(user))
            slicedUsers.insert(user);
      }
    auto whole = [&](BlockArgument param) {
      return !sliceOf.lookup(param) ||
             llvm::any_of(param.getUsers(), [&](Operation *user) {
               return !slicedUsers.contains(user);
             });
    };
    llvm::erase_if(regions, [&](const Region &region) {
      bool drop = llvm::any_of(region.parameters, [&](const auto &entry) {
        return whole(entry.first);
      });
      dropped |= drop;
      return drop;
    });
  }
}

LogicalResult TensorParallelRewriter::run() {
  if (ranks < 1 || ranks > std::numeric_limits<int32_t>::max())
    return func.emitError()
           << "tensor parallelism needs 1 to "
           << std::numeric_limits<int32_t>::max() << " ranks, got " << ranks;
  if (!llvm::hasSingleElement(func.getBody()))
    return func.emitError("tensor parallelism needs a function of one block");
  // Every MatMul with a parameter weight may end a pair: a row layer, its
  // input split along the contraction axis.
  SmallVector<Operation *> candidates;
  func.walk([&](Operation *op) {
    if (!isa<ONNXMatMulOp, ONNXGemmOp>(op))
      return;
    auto weight = getTrainableParameter(op->getOperand(1));
    auto input = getStaticType(op->getOperand(0));
    if (weight && input && input.getRank() >= 2 &&
        cast<RankedTensorType>(weight.getType()).getRank() == 2)
      candidates.push_back(op);
  });
  DenseSet<Operation *> taken;
  std::vector<Region> regions;
  for (Operation *candidate : candidates) {
    if (taken.contains(candidate))
      continue;
    Region region(ranks);
    Value input = candidate->getOperand(0);
    auto inputType = cast<RankedTensorType>(input.getType());
    if (!region.grow(input, Split{inputType.getRank() - 1,
                                  {inputType.getShape().back()}}))
      continue;
    if (llvm::any_of(region.ops,
                     [&](Operation *op) { return taken.contains(op); }))
      continue;
    taken.insert(region.ops.begin(), region.ops.end());
    regions.push_back(std::move(region));
  }
  dropRegionsOfPartlySlicedParameters(regions);
  if (regions.empty())
    return func.emitError()
           << "tensor parallelism over " << ranks
           << " ranks found no pair of linear layers to split (a MatMul by "
              "a parameter whose features, through elementwise ops, "
              "reshapes and attention, reach another MatMul by a parameter, "
              "each part divisible by the ranks)";
  setRankGridAxis(func->getParentOfType<ModuleOp>(), VramDialect::kTensorAxis,
                  ranks);
  for (const Region &region : regions)
    commit(region);
  func.setType(
      FunctionType::get(context, func.front().getArgumentTypes(),
                        func.front().getTerminator()->getOperandTypes()));
  return success();
}

LogicalResult parallelizeTensors(func::FuncOp func, int64_t ranks) {
  return TensorParallelRewriter(func, ranks).run();
}

} // namespace vram
