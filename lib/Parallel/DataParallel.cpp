//===- DataParallel.cpp - one data-parallel rank's training step ----------===//
//
// Data parallelism and the ZeRO stages, as DeepSpeed and PyTorch's DDP and
// FSDP run them, written into vram-train's step as `shard` collectives on
// the grid @ranks:
//
//   stage 0 (DDP)   gradient: all_reduce <average>, in place
//   stage 1         + optimizer state: this rank's 1/N slice of each tensor;
//                   the update runs on the rank's slice of the parameter and
//                   the parameter is all-gathered in place after it
//   stage 2         + gradient: reduce_scatter <average> as soon as it is
//                   final; the full gradient is a communication buffer
//   stage 3 (FSDP)  + parameter: only the rank's slice is kept; the full
//                   tensor is all-gathered before its forward use and again
//                   before its backward use, and dies after each
//
// Each tensor is sharded flat, split into N equal parts (padded to a
// multiple of N, as FSDP pads), so a rank's model states are DeepSpeed's
// formulas exactly where every tensor's size divides by N.
//
//===----------------------------------------------------------------------===//

#include "RankGrid.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Parallel/Parallelize.h"
#include "vram/Training/IRBuilding.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include <limits>

using namespace mlir;

namespace vram {
namespace {

/// A tensor of `elements` split flat into `ranks` slices of `slice`
/// elements (the last padded).
struct FlatSplit {
  int64_t elements, slice, padded;

  FlatSplit(RankedTensorType type, int64_t ranks)
      : elements(type.getNumElements()), slice((elements + ranks - 1) / ranks),
        padded(slice * ranks) {}
  bool isPadded() const { return padded != elements; }
};

/// Tags the ops from `first` up to, not including, `end` as `phase`.
void setPhaseUntil(Operation *first, Operation *end, Phase phase) {
  for (Operation *op = first; op != end; op = op->getNextNode())
    setPhase(op, phase);
}

class DataParallelRewriter {
public:
  DataParallelRewriter(func::FuncOp func, const ParallelOptions &options)
      : func(func), options(options), context(func.getContext()),
        dataAxis(context, VramDialect::kDataAxis) {}

  LogicalResult run();

private:
  LogicalResult check(ArrayRef<UpdateOp> updates);
  void averageLoss();
  void averageGradient(UpdateOp update);
  void shardState(UpdateOp update);
  void shardUpdatedParameter(UpdateOp update);
  void shardStoredParameter(UpdateOp update);
  void gatherForUses(BlockArgument param, ArrayRef<OpOperand *> uses,
                     RankedTensorType fullType, std::optional<Phase> phase);

  /// `flat` (the padded flat tensor) seen as `type`: its first elements,
  /// reshaped; views both.
  Value viewAs(IRBuilding &ir, Value flat, RankedTensorType type);
  /// `value` flattened and padded with zeros to `split.padded` elements,
  /// ready to be split among the ranks.
  Value flattenPadded(IRBuilding &ir, Value value, const FlatSplit &split);
  Value slice(OpBuilder &builder, Location loc, Value flat, int64_t size);
  /// Gives the argument `arg`, which held a `full` tensor, the type `type`
  /// of its flat layout (or a rank's slice of it), recording `full`.
  void setFlatType(BlockArgument arg, RankedTensorType full,
                   RankedTensorType type);
  IRBuilding irAt(OpBuilder &builder, Value param, StringRef what);

  func::FuncOp func;
  ParallelOptions options;
  MLIRContext *context;
  RankGridAxis dataAxis;
};

} // namespace

LogicalResult DataParallelRewriter::check(ArrayRef<UpdateOp> updates) {
  if (options.dataParallel < 1)
    return func.emitError() << "data parallelism needs at least 1 rank, got "
                            << options.dataParallel;
  // MPI and NCCL count ranks in an int; the padded sizes then stay in
  // 64 bits.
  if (options.dataParallel > std::numeric_limits<int32_t>::max())
    return func.emitError() << "data parallelism over "
                            << options.dataParallel
                            << " ranks: at most "
                            << std::numeric_limits<int32_t>::max()
                            << " (MPI and NCCL count ranks in an int)";
  if (options.zeroStage < 0 || options.zeroStage > 3)
    return func.emitError()
           << "ZeRO stage must be 0, 1, 2 or 3, got " << options.zeroStage;
  if (options.zeroStage >= 2 &&
      func->hasAttr(VramDialect::kPipelineStageAttrName))
    return func.emitError()
           << "ZeRO stage " << options.zeroStage
           << " with pipeline parallelism: each micro-batch's gradients would "
              "be reduce-scattered (and with stage 3 the parameters "
              "gathered) again; DeepSpeed allows only stages 0 and 1 with a "
              "pipeline, and so does vram-opt";
  if (updates.empty())
    return func.emitError()
           << "data parallelism needs a training step with an optimizer "
              "update (vram-train with an optimizer other than none)";
  for (UpdateOp update : updates) {
    if (!isa<BlockArgument>(update.getInits()[0]))
      return update.emitError()
             << "the updated parameter is not an argument of the step";
    if (options.zeroStage >= 1 && update.getAccumulate() > 1)
      return update.emitError()
             << "gradient accumulation with ZeRO stage " << options.zeroStage
             << " is not supported yet: the accumulated gradients would "
                "need their own sharding";
    if (options.zeroStage >= 2 && update.getScale())
      return update.emitError()
             << "clipping by global norm with ZeRO stage " << options.zeroStage
             << " is not supported: the norm of sharded gradients needs its "
                "own all-reduce";
  }
  return success();
}

IRBuilding DataParallelRewriter::irAt(OpBuilder &builder, Value param,
                                      StringRef what) {
  return IRBuilding(builder, NameLoc::get(StringAttr::get(
                                 context, getValueName(param) + "/" + what)));
}

Value DataParallelRewriter::slice(OpBuilder &builder, Location loc, Value flat,
                                  int64_t size) {
  auto type = cast<RankedTensorType>(flat.getType());
  if (type.getDimSize(0) == size)
    return flat;
  return tensor::ExtractSliceOp::create(
      builder, loc, type.clone({size}), flat, ValueRange(), ValueRange(),
      ValueRange(), builder.getDenseI64ArrayAttr({0}),
      builder.getDenseI64ArrayAttr({size}), builder.getDenseI64ArrayAttr({1}));
}

Value DataParallelRewriter::viewAs(IRBuilding &ir, Value flat,
                                   RankedTensorType type) {
  Value prefix =
      slice(ir.getBuilder(), ir.getLoc(), flat, type.getNumElements());
  return ir.reshape(prefix, type.getShape());
}

Value DataParallelRewriter::flattenPadded(IRBuilding &ir, Value value,
                                          const FlatSplit &split) {
  Value flat = ir.reshape(value, {split.elements});
  if (!split.isPadded())
    return flat;
  auto type = cast<RankedTensorType>(value.getType());
  return ir.pad(flat, {0, split.padded - split.elements},
                type.clone({split.padded}));
}

void DataParallelRewriter::setFlatType(BlockArgument arg, RankedTensorType full,
                                       RankedTensorType type) {
  arg.setType(type);
  func.setArgAttr(arg.getArgNumber(), VramDialect::kFlatOfAttrName,
                  TypeAttr::get(full));
}

/// The step reports the mean loss over all ranks' micro-batches: the loss
/// of the global batch when the micro-batches are equal.
void DataParallelRewriter::averageLoss() {
  // Of a pipeline, only the last stage has the loss.
  auto name = func.getNumResults() == 0
                  ? StringAttr()
                  : func.getResultAttrOfType<StringAttr>(0, "onnx.name");
  if (!name || name.getValue() != "loss")
    return;
  auto returnOp = cast<func::ReturnOp>(func.front().getTerminator());
  Value loss = returnOp.getOperand(0);
  OpBuilder builder(returnOp);
  auto average = shard::AllReduceOp::create(
      builder, NameLoc::get(StringAttr::get(context, "loss/all_reduce")),
      loss.getType(), dataAxis.grid, dataAxis.axes, loss,
      shard::ReductionKindAttr::get(context, shard::ReductionKind::Average));
  returnOp.setOperand(0, average);
}

void DataParallelRewriter::averageGradient(UpdateOp update) {
  Value grad = update.getGradient();
  Value param = update.getInits()[0];
  Operation *producer = grad.getDefiningOp();
  OpBuilder builder(context);
  builder.setInsertionPointAfter(producer);
  auto reduction =
      shard::ReductionKindAttr::get(context, shard::ReductionKind::Average);
  if (options.zeroStage <= 1) {
    // In place: the gradient's buffer holds the average.
    auto average = shard::AllReduceOp::create(
        builder, irAt(builder, param, "all_reduce").getLoc(), grad.getType(),
        dataAxis.grid, dataAxis.axes, grad, reduction);
    setPhase(average, Phase::Backward);
    grad.replaceAllUsesExcept(average, average);
    return;
  }
  // The full gradient only feeds the reduce-scatter (DeepSpeed's reduce
  // bucket): a communication buffer. The rank keeps its slice.
  Value storage = grad;
  while (auto result = dyn_cast_if_present<OpResult>(storage)) {
    if (getCategory(result.getOwner()) == MemoryCategory::Gradient)
      setCategory(result.getOwner(), MemoryCategory::Communication);
    storage = getAliasedOperand(result);
  }
  auto type = cast<RankedTensorType>(grad.getType());
  FlatSplit split(type, options.dataParallel);
  IRBuilding ir = irAt(builder, param, "reduce_scatter");
  Value flat = flattenPadded(ir, grad, split);
  auto scattered = shard::ReduceScatterOp::create(
      builder, ir.getLoc(), type.clone({split.slice}), dataAxis.grid,
      dataAxis.axes, flat, reduction, builder.getIndexAttr(0));
  setPhaseUntil(producer->getNextNode(), scattered->getNextNode(),
                Phase::Backward);
  setCategory(scattered, MemoryCategory::Gradient);
  update.getGradientMutable().set(scattered);
}

/// ZeRO-1 on: each state tensor (master weights, moments) becomes the
/// rank's slice, an argument of its own shape.
void DataParallelRewriter::shardState(UpdateOp update) {
  unsigned stateEnd = update.getInits().size() - (update.getAccumulate() > 1);
  for (unsigned i = 1; i < stateEnd; ++i) {
    auto state = cast<BlockArgument>(update.getInits()[i]);
    auto type = cast<RankedTensorType>(state.getType());
    FlatSplit split(type, options.dataParallel);
    auto sliceType = type.clone({split.slice});
    setFlatType(state, type, sliceType);
    update->getResult(i).setType(sliceType);
  }
}

/// ZeRO-1/2: the parameter stays whole; the update writes the rank's slice
/// of it (and reads the rank's slice of the gradient), and an in-place
/// all-gather completes it.
void DataParallelRewriter::shardUpdatedParameter(UpdateOp update) {
  auto param = cast<BlockArgument>(update.getInits()[0]);
  auto type = cast<RankedTensorType>(param.getType());
  FlatSplit split(type, options.dataParallel);
  OpBuilder builder(update);
  IRBuilding ir = irAt(builder, param, "shard");
  auto sliceType = type.clone({split.slice});
  auto paddedType = type.clone({split.padded});
  if (split.isPadded()) {
    // The parameter is stored padded (the rank's slice of a flat buffer
    // with N x slice elements); the forward and backward read a view.
    auto uses = llvm::map_to_vector(param.getUses(),
                                    [](OpOperand &use) { return &use; });
    setFlatType(param, type, paddedType);
    OpBuilder entry = OpBuilder::atBlockBegin(&func.front());
    IRBuilding viewIr = irAt(entry, param, "view");
    Value view = viewAs(viewIr, param, type);
    for (OpOperand *use : uses)
      use->set(view);
  }
  Operation *last = update->getPrevNode();
  Value flat = ir.reshape(param, {split.padded});
  auto own =
      shard::AllSliceOp::create(builder, ir.getLoc(), sliceType, dataAxis.grid,
                                dataAxis.axes, flat, builder.getIndexAttr(0));
  update.getInitsMutable()[0].set(own);
  if (options.zeroStage <= 1) {
    // All-reduced in full: the update reads the rank's slice of it.
    Value grad = update.getGradient();
    IRBuilding gradIr = irAt(builder, param, "grad_shard");
    Value flatGrad = flattenPadded(gradIr, grad, split);
    auto gradSlice = shard::AllSliceOp::create(
        builder, gradIr.getLoc(), sliceType, dataAxis.grid, dataAxis.axes,
        flatGrad, builder.getIndexAttr(0));
    update.getGradientMutable().set(gradSlice);
  }
  setPhaseUntil(last->getNextNode(), update, Phase::Optimizer);
  Value updated = update->getResult(0);
  updated.setType(sliceType);
  builder.setInsertionPointAfter(update);
  IRBuilding after = irAt(builder, param, "all_gather");
  auto whole = shard::AllGatherOp::create(builder, after.getLoc(), paddedType,
                                          dataAxis.grid, dataAxis.axes, updated,
                                          builder.getIndexAttr(0));
  // Back in the parameter's stored shape: padded flat, or its own.
  Value result = after.reshape(
      whole, cast<RankedTensorType>(param.getType()).getShape());
  setPhaseUntil(update->getNextNode(), result.getDefiningOp()->getNextNode(),
                Phase::Optimizer);
  updated.replaceAllUsesExcept(result, whole);
}

/// Replaces `uses` of the parameter slice `param` by the whole tensor,
/// all-gathered (a communication buffer) right before the first of them.
void DataParallelRewriter::gatherForUses(BlockArgument param,
                                         ArrayRef<OpOperand *> uses,
                                         RankedTensorType fullType,
                                         std::optional<Phase> phase) {
  if (uses.empty())
    return;
  Operation *first = uses.front()->getOwner();
  for (OpOperand *use : uses)
    if (use->getOwner()->isBeforeInBlock(first))
      first = use->getOwner();
  FlatSplit split(fullType, options.dataParallel);
  OpBuilder builder(first);
  IRBuilding ir =
      irAt(builder, param, phase ? "all_gather_backward" : "all_gather");
  auto gathered = shard::AllGatherOp::create(
      builder, ir.getLoc(), fullType.clone({split.padded}), dataAxis.grid,
      dataAxis.axes, param, builder.getIndexAttr(0));
  setCategory(gathered, MemoryCategory::Communication);
  Value whole = viewAs(ir, gathered, fullType);
  if (phase)
    setPhaseUntil(gathered, first, *phase);
  for (OpOperand *use : uses)
    use->set(whole);
}

/// ZeRO-3: the step keeps only the rank's slice of the parameter, updates
/// it in place, and gathers the whole tensor for the forward and again for
/// the backward.
void DataParallelRewriter::shardStoredParameter(UpdateOp update) {
  auto param = cast<BlockArgument>(update.getInits()[0]);
  auto type = cast<RankedTensorType>(param.getType());
  FlatSplit split(type, options.dataParallel);
  SmallVector<OpOperand *> forwardUses, backwardUses;
  for (OpOperand &use : param.getUses()) {
    if (use.getOwner() == update)
      continue;
    std::optional<Phase> phase = getPhase(use.getOwner());
    (phase ? backwardUses : forwardUses).push_back(&use);
  }
  auto sliceType = type.clone({split.slice});
  setFlatType(param, type, sliceType);
  update->getResult(0).setType(sliceType);
  gatherForUses(param, forwardUses, type, std::nullopt);
  gatherForUses(param, backwardUses, type, Phase::Backward);
}

LogicalResult DataParallelRewriter::run() {
  SmallVector<UpdateOp> updates;
  func.walk([&](UpdateOp update) { updates.push_back(update); });
  if (failed(check(updates)))
    return failure();
  setRankGridAxis(func->getParentOfType<ModuleOp>(), VramDialect::kDataAxis,
                  options.dataParallel);
  averageLoss();
  for (UpdateOp update : updates) {
    averageGradient(update);
    if (options.zeroStage == 0)
      continue;
    shardState(update);
    if (options.zeroStage == 3)
      shardStoredParameter(update);
    else
      shardUpdatedParameter(update);
  }
  func.setType(
      FunctionType::get(context, func.front().getArgumentTypes(),
                        func.front().getTerminator()->getOperandTypes()));
  return success();
}

LogicalResult parallelizeDataParallel(func::FuncOp func,
                                      const ParallelOptions &options) {
  return DataParallelRewriter(func, options).run();
}

} // namespace vram
