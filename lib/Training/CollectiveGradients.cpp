//===- CollectiveGradients.cpp - gradients across tensor-parallel ranks ---===//
//
// A layer split among ranks (vram-tensor-parallel) is entered through
// vram.tensor_parallel_copy and left through shard.all_reduce <sum>
// (Megatron-LM's f and g): each is the other's gradient. With sequence
// parallelism they are an all-gather and a reduce-scatter of the tokens,
// likewise each other's gradient, and a rank's slice of the tokens.
//
//===----------------------------------------------------------------------===//
#include "GradientRules.h"

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace vram::gradient_rules;

namespace vram {

/// Each rank's gradient of the copy holds its part's contribution: the
/// input's gradient is their sum.
static Gradients gradientOf(TensorParallelCopyOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  if (!dY[0])
    return SmallVector<Value>{Value()};
  OpBuilder &builder = ir.getBuilder();
  Value sum = shard::AllReduceOp::create(
      builder, ir.getLoc(), dY[0].getType(), op.getGridAttr(),
      op.getGridAxesAttr(), dY[0],
      shard::ReductionKindAttr::get(op.getContext(),
                                    shard::ReductionKind::Sum));
  return SmallVector<Value>{sum};
}

/// The sum of the ranks' partial results is the same on every rank, and so
/// is its gradient: each rank's partial result has that gradient.
static Gradients gradientOf(shard::AllReduceOp op, IRBuilding &, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  if (op.getReduction() != shard::ReductionKind::Sum)
    return op.emitError("only an all-reduce <sum> has a gradient rule");
  return SmallVector<Value>{dY[0]};
}

/// Sequence parallelism's gather of the tokens: each rank's tokens get the
/// sum of the ranks' (partial) gradients of them, or where the gathered
/// tensor's readers run replicated, the rank's part of the gradient.
static Gradients gradientOf(shard::AllGatherOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  if (!dY[0])
    return SmallVector<Value>{Value()};
  if (op->hasAttr(VramDialect::kReplicatedReadersAttrName)) {
    Value part = shard::AllSliceOp::create(
        ir.getBuilder(), ir.getLoc(), op.getInput().getType(), op.getGridAttr(),
        op.getGridAxesAttr(), dY[0], op.getGatherAxisAttr());
    return SmallVector<Value>{part};
  }
  Value part = shard::ReduceScatterOp::create(
      ir.getBuilder(), ir.getLoc(), op.getInput().getType(), op.getGridAttr(),
      op.getGridAxesAttr(), dY[0],
      shard::ReductionKindAttr::get(op.getContext(), shard::ReductionKind::Sum),
      op.getGatherAxisAttr());
  return SmallVector<Value>{part};
}

/// The reduce-scatter of a row layer's partial results (sequence
/// parallelism): every rank's partial result had the whole gradient.
static Gradients gradientOf(shard::ReduceScatterOp op, IRBuilding &ir,
                            ValueRange, ValueRange dY, ArrayRef<bool>) {
  if (op.getReduction() != shard::ReductionKind::Sum)
    return op.emitError("only a reduce-scatter <sum> has a gradient rule");
  if (!dY[0])
    return SmallVector<Value>{Value()};
  Value whole = shard::AllGatherOp::create(
      ir.getBuilder(), ir.getLoc(), op.getInput().getType(), op.getGridAttr(),
      op.getGridAxesAttr(), dY[0], op.getScatterAxisAttr());
  return SmallVector<Value>{whole};
}

/// A rank's slice of a replicated value (the embeddings entering the
/// sequence-parallel layers): the value's gradient is every rank's.
static Gradients gradientOf(shard::AllSliceOp op, IRBuilding &ir, ValueRange,
                            ValueRange dY, ArrayRef<bool>) {
  if (!dY[0])
    return SmallVector<Value>{Value()};
  Value whole = shard::AllGatherOp::create(
      ir.getBuilder(), ir.getLoc(), op.getInput().getType(), op.getGridAttr(),
      op.getGridAxesAttr(), dY[0], op.getSliceAxisAttr());
  return SmallVector<Value>{whole};
}

void gradient_rules::attachCollectiveGradients(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, VramDialect *) {
    attachGradientModels<TensorParallelCopyOp>(context);
  });
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    attachGradientModels<shard::AllReduceOp, shard::AllGatherOp,
                         shard::ReduceScatterOp, shard::AllSliceOp>(context);
  });
}

} // namespace vram
