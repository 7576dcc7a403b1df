//===- SequenceParallel.cpp - Megatron-style sequence parallelism ---------===//
//
// Sequence parallelism (Korthikanti et al. 2022) on top of tensor
// parallelism: the ops between a row-parallel layer and the next
// column-parallel layer (residual sums, LayerNorms, dropout, biases) work
// token by token, so instead of running them on every rank on the whole
// sequence each rank runs them on its 1/T of the tokens. The all-reduce
// after a row layer becomes a reduce-scatter along the tokens, the copy
// before a column layer an all-gather; the residual stream between them
// holds the rank's tokens only.
//
// The token axis of a value is its second-to-last (the sequence of
// [batch, sequence, hidden], the rows of [tokens, hidden]). From the
// all-reduces' results and the copies' inputs the split spreads through the
// token-wise ops, to their operands and users, until it meets anything
// else: a value made outside is sliced (shard.all_slice, a view: the
// embeddings), and a use outside gathers it (the head).
//
//===----------------------------------------------------------------------===//

#include "RankGrid.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Parallel/Parallelize.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace vram {
namespace {

/// The number of tokens of `value` (its second-to-last dim), or 0.
int64_t getTokenCount(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 2)
    return 0;
  return type.getDimSize(type.getRank() - 2);
}

/// Ops that compute each token from that token alone.
bool isTokenWise(Operation *op) {
  if (auto norm = dyn_cast<ONNXLayerNormalizationOp>(op)) {
    int64_t rank = cast<RankedTensorType>(norm.getX().getType()).getRank();
    int64_t axis = int64_t(norm.getAxis());
    return axis == -1 || axis == rank - 1;
  }
  if (isa<ONNXDropoutOp, ONNXWhereOp>(op) ||
      op->hasTrait<OpTrait::ResultsBroadcastableShape>())
    return true;
  return isUnaryElementwise(op);
}

class SequenceParallelRewriter {
public:
  SequenceParallelRewriter(func::FuncOp func, int64_t ranks)
      : func(func), ranks(ranks), context(func.getContext()),
        tensorAxis(context, VramDialect::kTensorAxis) {}

  LogicalResult run();

private:
  /// Adds `value` (with `tokens` tokens) to the split values.
  void add(Value value);
  /// A token-wise op `op` touching the split: its operands and results
  /// with the tokens are split too.
  void spread(Operation *op);
  RankedTensorType localType(Value value) const;
  IntegerAttr tokenAxisOf(Value value) const;

  func::FuncOp func;
  int64_t ranks;
  MLIRContext *context;
  RankGridAxis tensorAxis;
  int64_t tokens = 0;
  llvm::SetVector<Value> split;
  llvm::SetVector<Operation *> tokenWise;
  SmallVector<Value> worklist;
};

} // namespace

void SequenceParallelRewriter::add(Value value) {
  if (getTokenCount(value) == tokens && split.insert(value))
    worklist.push_back(value);
}

void SequenceParallelRewriter::spread(Operation *op) {
  if (!tokenWise.insert(op))
    return;
  for (Value operand : op->getOperands())
    add(operand);
  for (Value result : op->getResults())
    add(result);
}

RankedTensorType SequenceParallelRewriter::localType(Value value) const {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[shape.size() - 2] /= ranks;
  return type.clone(shape);
}

IntegerAttr SequenceParallelRewriter::tokenAxisOf(Value value) const {
  return IntegerAttr::get(IndexType::get(context),
                          cast<RankedTensorType>(value.getType()).getRank() -
                              2);
}

LogicalResult SequenceParallelRewriter::run() {
  if (ranks < 2)
    return func.emitError("sequence parallelism needs tensor parallelism "
                          "(tp > 1) to have split a pair of layers");
  SmallVector<shard::AllReduceOp> sums;
  SmallVector<TensorParallelCopyOp> copies;
  func.walk([&](Operation *op) {
    if (auto sum = dyn_cast<shard::AllReduceOp>(op))
      sums.push_back(sum);
    else if (auto copy = dyn_cast<TensorParallelCopyOp>(op))
      copies.push_back(copy);
  });
  if (sums.empty() || copies.empty())
    return func.emitError("sequence parallelism needs tensor parallelism "
                          "(tp > 1) to have split a pair of layers");
  tokens = getTokenCount(sums.front());
  for (Value seed : llvm::concat<Value>(
           llvm::map_range(sums, [](auto s) -> Value { return s.getResult(); }),
           llvm::map_range(copies,
                           [](auto c) -> Value { return c.getInput(); })))
    if (getTokenCount(seed) != tokens)
      return func.emitError()
             << "sequence parallelism needs every split layer's input and "
                "output to have the same tokens (second-to-last dim), got "
             << seed.getType() << " and " << tokens;
  if (tokens % ranks != 0)
    return func.emitError()
           << "sequence parallelism over " << ranks << " ranks: the " << tokens
           << " tokens do not divide among them";
  for (shard::AllReduceOp sum : sums)
    add(sum.getResult());
  for (TensorParallelCopyOp copy : copies)
    add(copy.getInput());
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *producer = value.getDefiningOp();
    if (producer && isTokenWise(producer))
      spread(producer);
    for (Operation *user : value.getUsers())
      if (isTokenWise(user))
        spread(user);
  }

  // What the split ops read whole (LayerNorm's scale and bias, a row
  // layer's bias) gets from each rank the gradient of its tokens only: read
  // through a copy, whose gradient sums them (Megatron-LM all-reduces these
  // parameters' gradients across the tensor-parallel ranks).
  DenseMap<Value, Value> copiesOf;
  for (Operation *op : tokenWise)
    for (OpOperand &use : op->getOpOperands()) {
      Value operand = use.get();
      Operation *producer = operand.getDefiningOp();
      if (split.contains(operand) ||
          !isa<FloatType>(getElementTypeOrSelf(operand.getType())) ||
          (producer && producer->hasTrait<OpTrait::ConstantLike>()))
        continue;
      Value &copy = copiesOf[operand];
      if (!copy) {
        OpBuilder builder(context);
        if (producer)
          builder.setInsertionPointAfter(producer);
        else
          builder.setInsertionPointToStart(&func.front());
        copy = TensorParallelCopyOp::create(builder, operand.getLoc(),
                                            operand.getType(), operand,
                                            tensorAxis.grid, tensorAxis.axes);
      }
      use.set(copy);
    }

  // Values made outside the split (the embeddings, an all-reduce's sum)
  // keep their type; the split ops read the rank's part of them.
  auto madeOutside = [&](Value value) {
    Operation *producer = value.getDefiningOp();
    return !producer || !tokenWise.contains(producer);
  };
  for (Value value : split) {
    if (!madeOutside(value))
      continue;
    OpBuilder builder(context);
    if (Operation *producer = value.getDefiningOp())
      builder.setInsertionPointAfter(producer);
    else
      builder.setInsertionPointToStart(&func.front());
    Value part;
    if (auto sum = value.getDefiningOp<shard::AllReduceOp>()) {
      // The row layer's partial results: each rank sums its tokens.
      part = shard::ReduceScatterOp::create(
          builder, sum.getLoc(), localType(value), tensorAxis.grid,
          tensorAxis.axes, sum.getInput(),
          shard::ReductionKindAttr::get(context, shard::ReductionKind::Sum),
          tokenAxisOf(value));
    } else {
      part = shard::AllSliceOp::create(
          builder, value.getLoc(), localType(value), tensorAxis.grid,
          tensorAxis.axes, value, tokenAxisOf(value));
    }
    value.replaceUsesWithIf(part, [&](OpOperand &use) {
      return tokenWise.contains(use.getOwner());
    });
  }
  // Uses outside the split gather the tokens back: a column layer's copy
  // becomes the gather (Megatron's all-gather before the layer).
  for (Value value : split) {
    if (madeOutside(value))
      continue;
    RankedTensorType whole = cast<RankedTensorType>(value.getType());
    value.setType(localType(value));
    SmallVector<OpOperand *> outside;
    for (OpOperand &use : value.getUses())
      if (!tokenWise.contains(use.getOwner()))
        outside.push_back(&use);
    if (outside.empty())
      continue;
    OpBuilder builder(context);
    builder.setInsertionPointAfterValue(value);
    Value gathered = shard::AllGatherOp::create(
        builder, value.getLoc(), whole, tensorAxis.grid, tensorAxis.axes, value,
        tokenAxisOf(value));
    // A column layer's copy becomes the gather: its readers' gradients
    // are partial sums, which the gather's gradient reduces. Other readers
    // run replicated: each rank's gradient is already the whole one.
    Value replicated;
    for (OpOperand *use : outside) {
      if (auto copy = dyn_cast<TensorParallelCopyOp>(use->getOwner())) {
        copy.replaceAllUsesWith(gathered);
        copy.erase();
        continue;
      }
      if (!replicated) {
        replicated = builder.clone(*gathered.getDefiningOp())->getResult(0);
        replicated.getDefiningOp()->setAttr(
            VramDialect::kReplicatedReadersAttrName, UnitAttr::get(context));
      }
      use->set(replicated);
    }
    if (gathered.use_empty())
      gathered.getDefiningOp()->erase();
  }
  for (shard::AllReduceOp sum : sums)
    if (sum->use_empty())
      sum.erase();
  func.setType(
      FunctionType::get(context, func.front().getArgumentTypes(),
                        func.front().getTerminator()->getOperandTypes()));
  return success();
}

LogicalResult parallelizeSequence(func::FuncOp func, int64_t ranks) {
  return SequenceParallelRewriter(func, ranks).run();
}

} // namespace vram
