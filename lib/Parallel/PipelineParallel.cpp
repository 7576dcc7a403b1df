//===- PipelineParallel.cpp - one pipeline stage's training step ----------===//
//
// Pipeline parallelism as Megatron-LM and DeepSpeed run it: the model's
// layers are cut into stages, one per rank of the grid's pipeline axis, and
// a step runs M micro-batches through them. Two rewrites:
//
//   splitPipelineStage (before vram-train) keeps one stage of the forward
//     pass: the activation it receives is an argument, the one it sends its
//     result; vram-train then builds the stage's backward from the gradient
//     the next stage sends and returns the gradient of the received
//     activation.
//   schedulePipeline (after vram-train) unrolls that step over the M
//     micro-batches in the 1F1B order, with the transfers as shard.send /
//     shard.recv, so the memory analysis sees what a stage holds: the
//     activations of every micro-batch it has run forward and not yet
//     backward (up to `stages - stage` of them), its parameters, the summed
//     gradients and the optimizer state.
//
//===----------------------------------------------------------------------===//

#include "RankGrid.h"
#include "vram/Analysis/CostModel.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Parallel/Parallelize.h"
#include "vram/Training/IRBuilding.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace vram {
namespace {

constexpr StringLiteral kPrevious = "previous";
constexpr StringLiteral kNext = "next";

//===----------------------------------------------------------------------===//
// Cutting the forward pass into stages
//===----------------------------------------------------------------------===//

/// Ops that only look at a parameter differently: a stage that reads the
/// view holds the parameter itself (a tied LM head's transposed embedding,
/// sequence parallelism's copies of the LayerNorm scales and slice of the
/// position table).
bool isParameterView(Operation *op) {
  return isa<ONNXTransposeOp, ONNXReshapeOp, ONNXCastOp, ONNXIdentityOp,
             ONNXUnsqueezeOp, ONNXSqueezeOp, ONNXFlattenOp,
             TensorParallelCopyOp, shard::AllSliceOp>(op);
}

/// The forward pass as a sequence of the ops that carry activations: the
/// others (computed from data inputs and constants alone, or views of
/// parameters) are replicable, computed on every stage that reads them.
struct StageCut {
  SmallVector<Operation *> carried;
  llvm::DenseSet<Operation *> replicable;
  /// Positions k (1 <= k < carried.size()) where exactly one value made
  /// by carried[0..k) is read at or after k, and that value.
  SmallVector<std::pair<size_t, Value>> cuts;
  /// Cost (flops) of carried[0..k), for k = 0..carried.size().
  SmallVector<double> prefixCost;

  explicit StageCut(func::FuncOp func);
};

StageCut::StageCut(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto isParameter = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && getParamKind(func, arg.getArgNumber()).has_value();
  };
  for (Operation &op : body.without_terminator()) {
    bool fromDataOnly = llvm::all_of(op.getOperands(), [&](Value operand) {
      if (auto result = dyn_cast<OpResult>(operand))
        return replicable.contains(result.getOwner());
      return !isParameter(operand) || isParameterView(&op);
    });
    if (fromDataOnly)
      replicable.insert(&op);
    else
      carried.push_back(&op);
  }
  llvm::DenseMap<Operation *, size_t> position;
  for (auto [i, op] : llvm::enumerate(carried))
    position[op] = i;
  // Values crossing each gap between carried ops: a value made at p and
  // last read at q crosses the gaps p+1..q.
  size_t n = carried.size();
  SmallVector<int64_t> crossingDelta(n + 2, 0);
  SmallVector<Value> made;
  SmallVector<size_t> lastRead;
  for (auto [p, op] : llvm::enumerate(carried))
    for (Value result : op->getResults()) {
      size_t last = p;
      for (Operation *user : result.getUsers()) {
        auto it = position.find(user);
        // The return reads after everything; replicable ops read no
        // carried value.
        last = std::max(last, it == position.end() ? n : it->second);
      }
      if (last == p)
        continue;
      ++crossingDelta[p + 1];
      --crossingDelta[last + 1];
      made.push_back(result);
      lastRead.push_back(last);
    }
  int64_t crossing = 0;
  SmallVector<size_t> singleGaps;
  for (size_t k = 1; k < n; ++k) {
    crossing += crossingDelta[k];
    if (crossing == 1)
      singleGaps.push_back(k);
  }
  for (size_t k : singleGaps)
    for (auto [value, last] : llvm::zip(made, lastRead)) {
      size_t p = position[value.getDefiningOp()];
      if (p >= k || k > last)
        continue;
      // The same value crossing the next gap too: a stage between them
      // would compute nothing the output needs.
      if (cuts.empty() || cuts.back().second != value)
        cuts.push_back({k, value});
      break;
    }
  prefixCost.push_back(0);
  for (Operation *op : carried)
    prefixCost.push_back(prefixCost.back() + estimateOpCost(op).flops);
}

/// The cuts between `stages` stages, indices into `cut.cuts`: the first and
/// last possible cuts bound the repeated layers, which are shared out by
/// cost; what comes before goes with stage 0, what comes after with the last.
SmallVector<size_t> chooseCuts(const StageCut &cut, int64_t stages) {
  SmallVector<size_t> chosen;
  size_t count = cut.cuts.size();
  double first = cut.prefixCost[cut.cuts.front().first];
  double span = cut.prefixCost[cut.cuts.back().first] - first;
  size_t next = 0;
  for (int64_t j = 1; j < stages; ++j) {
    double target = first + span * double(j) / double(stages);
    // Leave enough cuts for the stages after this one.
    size_t last = count - size_t(stages - j);
    size_t best = next;
    for (size_t i = next; i <= last; ++i)
      if (std::abs(cut.prefixCost[cut.cuts[i].first] - target) <
          std::abs(cut.prefixCost[cut.cuts[best].first] - target))
        best = i;
    chosen.push_back(best);
    next = best + 1;
  }
  return chosen;
}

/// Marks the parameters that stage `stage` reads and other stages read
/// too (an embedding tied to the LM head) with the other stages
/// (VramDialect::kPipelineSharedAttrName): each stage holds its copy and
/// their gradients are summed.
void markSharedParameters(func::FuncOp func, const StageCut &cut,
                          ArrayRef<size_t> chosen, int64_t stage) {
  // The stages each op's results reach, from the last op back: a carried
  // op's own, a replicable one's every reader's.
  llvm::DenseMap<Operation *, llvm::SmallSetVector<int64_t, 2>> stagesOf;
  for (auto [position, op] : llvm::enumerate(cut.carried)) {
    int64_t owner = llvm::count_if(
        chosen, [&](size_t c) { return cut.cuts[c].first <= position; });
    stagesOf[op].insert(owner);
  }
  Block &body = func.getBody().front();
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (!cut.replicable.contains(&op))
      continue;
    auto &mine = stagesOf[&op];
    for (Operation *user : op.getUsers())
      if (auto it = stagesOf.find(user); it != stagesOf.end())
        mine.insert(it->second.begin(), it->second.end());
  }
  for (BlockArgument arg : func.getArguments()) {
    if (getParamKind(func, arg.getArgNumber()) != ParamKind::Trainable)
      continue;
    llvm::SmallSetVector<int64_t, 2> readers;
    for (Operation *user : arg.getUsers())
      if (auto it = stagesOf.find(user); it != stagesOf.end())
        readers.insert(it->second.begin(), it->second.end());
    if (!readers.contains(stage) || readers.size() < 2)
      continue;
    SmallVector<int64_t> others;
    for (int64_t reader : readers)
      if (reader != stage)
        others.push_back(reader);
    llvm::sort(others);
    func.setArgAttr(arg.getArgNumber(), VramDialect::kPipelineSharedAttrName,
                    DenseI64ArrayAttr::get(func.getContext(), others));
  }
}

DictionaryAttr getStageAttr(func::FuncOp func) {
  return func->getAttrOfType<DictionaryAttr>(
      VramDialect::kPipelineStageAttrName);
}

int64_t getStageField(DictionaryAttr attr, StringRef field) {
  return cast<IntegerAttr>(attr.get(field)).getInt();
}

LogicalResult checkOptions(func::FuncOp func, const PipelineOptions &options) {
  if (options.stages < 1 ||
      options.stages > std::numeric_limits<int32_t>::max())
    return func.emitError() << "pipeline parallelism needs 1 to "
                            << std::numeric_limits<int32_t>::max()
                            << " stages, got " << options.stages;
  if (options.stage < 0 || options.stage >= options.stages)
    return func.emitError()
           << "pipeline stage " << options.stage
           << " does not exist: the stages are 0 to " << options.stages - 1;
  if (options.microbatches < 0 || options.microbatches > (int64_t(1) << 20))
    return func.emitError() << "a pipeline step runs 1 to " << (1 << 20)
                            << " micro-batches (0: as many as stages), got "
                            << options.microbatches;
  if (!llvm::hasSingleElement(func.getBody()))
    return func.emitError("pipeline parallelism needs a function with one "
                          "block");
  if (getStageAttr(func))
    return func.emitError("the function is already one pipeline stage");
  return success();
}

} // namespace

LogicalResult splitPipelineStage(func::FuncOp func,
                                 const PipelineOptions &options) {
  if (failed(checkOptions(func, options)))
    return failure();
  MLIRContext *context = func.getContext();
  Builder builder(context);
  // Fewer micro-batches than stages leave stages idle; as many is the
  // least that keeps every stage busy in the steady state.
  int64_t microbatches =
      options.microbatches == 0 ? options.stages : options.microbatches;
  func->setAttr(
      VramDialect::kPipelineStageAttrName,
      builder.getDictionaryAttr({
          builder.getNamedAttr("stage",
                               builder.getI64IntegerAttr(options.stage)),
          builder.getNamedAttr("stages",
                               builder.getI64IntegerAttr(options.stages)),
          builder.getNamedAttr("microbatches",
                               builder.getI64IntegerAttr(microbatches)),
      }));
  setRankGridAxis(func->getParentOfType<ModuleOp>(), VramDialect::kPipelineAxis,
                  options.stages);
  if (options.stages == 1)
    return success();

  StageCut cut(func);
  if (cut.cuts.size() < size_t(options.stages - 1))
    return func.emitError()
           << "cannot cut the model into " << options.stages
           << " pipeline stages: it has " << cut.cuts.size()
           << " places where a single activation crosses (between layers), "
              "and the stages need "
           << options.stages - 1;
  SmallVector<size_t> chosen = chooseCuts(cut, options.stages);
  int64_t s = options.stage;
  size_t begin = s == 0 ? 0 : cut.cuts[chosen[s - 1]].first;
  size_t end =
      s + 1 == options.stages ? cut.carried.size() : cut.cuts[chosen[s]].first;

  markSharedParameters(func, cut, chosen, s);
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  if (s > 0) {
    // The activation from the previous stage becomes an argument.
    Value received = cut.cuts[chosen[s - 1]].second;
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(
        index, received.getType(),
        builder.getDictionaryAttr(
            {builder.getNamedAttr(
                 "onnx.name", builder.getStringAttr(getValueName(received))),
             builder.getNamedAttr(VramDialect::kPipelineRecvAttrName,
                                  builder.getStringAttr(kPrevious))}),
        received.getLoc());
    received.replaceAllUsesWith(func.getArgument(index));
  }
  if (s + 1 < options.stages) {
    Value sent = cut.cuts[chosen[s]].second;
    returnOp->setOperands(sent);
    func.setAllResultAttrs(ArrayRef<DictionaryAttr>{builder.getDictionaryAttr(
        {builder.getNamedAttr("onnx.name",
                              builder.getStringAttr(getValueName(sent))),
         builder.getNamedAttr(VramDialect::kPipelineSendAttrName,
                              builder.getStringAttr(kNext))})});
  }
  // Other stages' carried ops go; replicable ones stay where a kept op
  // reads them.
  llvm::DenseSet<Operation *> kept(cut.carried.begin() + begin,
                                   cut.carried.begin() + end);
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (kept.contains(op) || (cut.replicable.contains(op) && !op->use_empty()))
      continue;
    if (!op->use_empty())
      return op->emitError("internal error: an op of another pipeline stage "
                           "is read by this one");
    op->erase();
  }
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  if (failed(func.eraseArguments(unused)))
    return failure();
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 returnOp->getOperandTypes()));
  return success();
}

//===----------------------------------------------------------------------===//
// The 1F1B schedule of one stage's step
//===----------------------------------------------------------------------===//

namespace {

class PipelineScheduler {
public:
  PipelineScheduler(func::FuncOp func, DictionaryAttr stageAttr)
      : func(func), context(func.getContext()),
        pipelineAxis(context, VramDialect::kPipelineAxis),
        stage(getStageField(stageAttr, "stage")),
        stages(getStageField(stageAttr, "stages")),
        microbatches(getStageField(stageAttr, "microbatches")) {}

  LogicalResult run();

private:
  LogicalResult classify();
  /// Runs the forward (`backward` false) or backward pass of micro-batch
  /// `mb`, inserted before the return.
  void emitPass(int64_t mb, bool backward);
  /// Transfers tagged with `phase` (none: forward).
  Value receive(OpBuilder &builder, BlockArgument arg, int64_t mb,
                std::optional<Phase> phase);
  void send(OpBuilder &builder, Value value, StringRef to, int64_t mb,
            std::optional<Phase> phase);
  Location locFor(Location loc, int64_t mb);
  /// Adds to the summed gradient of each parameter other stages hold too
  /// theirs: each stage sends its sum to the others and adds what it
  /// receives (Megatron-LM's all-reduce of the tied embedding's gradient
  /// between the first and the last stage).
  void exchangeSharedGradients(OpBuilder &builder);
  /// The micro-batch `mb`'s part of the stacked data input `arg`.
  Value dataOf(OpBuilder &builder, BlockArgument arg, int64_t mb);

  func::FuncOp func;
  MLIRContext *context;
  RankGridAxis pipelineAxis;
  int64_t stage, stages, microbatches;

  SmallVector<Operation *> forward, backward, optimizer;
  /// The results sent to a neighbour, the loss (last stage), and what
  /// the step returns otherwise (the updates, the step count).
  SmallVector<std::pair<Value, StringRef>> sent;
  Value loss;
  /// Values of the backward pass the optimizer reads (the gradients): each
  /// micro-batch's is added into `summed`.
  SmallVector<Value> gradients;
  llvm::DenseMap<Value, Value> summed;
  /// The parameter each gradient updates.
  llvm::DenseMap<Value, BlockArgument> parameterOf;
  SmallVector<BlockArgument> dataInputs;
  llvm::DenseMap<Value, Value> perMicrobatchData;
  SmallVector<IRMapping> mappings;
  SmallVector<Value> losses;
};

} // namespace

LogicalResult PipelineScheduler::classify() {
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  UpdateOp firstUpdate;
  for (Operation &op : body.without_terminator()) {
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    std::optional<Phase> phase = getPhase(&op);
    if (firstUpdate && phase == Phase::Backward)
      return firstUpdate.emitError(
          "updates inside the backward pass (update=in-backward) do not "
          "combine with pipeline parallelism: each parameter is updated "
          "once, after every micro-batch's backward");
    (!phase                      ? forward
     : *phase == Phase::Backward ? backward
                                 : optimizer)
        .push_back(&op);
    if (auto update = dyn_cast<UpdateOp>(op)) {
      if (update.getScale())
        return update.emitError(
            "clipping by global norm is not supported with pipeline "
            "parallelism: the norm needs every stage's gradients");
      if (update.getAccumulate() > 1)
        return update.emitError(
            "gradient accumulation with pipeline parallelism: the pipeline's "
            "micro-batches are the accumulation (set microbatches instead)");
      if (!firstUpdate)
        firstUpdate = update;
    }
  }
  for (auto [index, operand] : llvm::enumerate(returnOp.getOperands())) {
    auto to = func.getResultAttrOfType<StringAttr>(
        index, VramDialect::kPipelineSendAttrName);
    auto name = func.getResultAttrOfType<StringAttr>(index, "onnx.name");
    if (to) {
      sent.push_back({operand, to.getValue()});
      continue;
    }
    Operation *producer = operand.getDefiningOp();
    if (name && name.getValue() == "loss" && index == 0) {
      loss = operand;
      continue;
    }
    if (producer && getPhase(producer) == Phase::Optimizer)
      continue;
    return func.emitError()
           << "pipeline parallelism: the step returns '"
           << (name ? name.getValue() : StringRef("?"))
           << "', which each micro-batch would update in turn (training-mode "
              "BatchNormalization's running statistics are not supported)";
  }
  llvm::DenseSet<Value> seen;
  for (Operation *op : optimizer) {
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp();
          producer && getPhase(producer) == Phase::Backward &&
          seen.insert(operand).second)
        gradients.push_back(operand);
    if (auto update = dyn_cast<UpdateOp>(op))
      parameterOf[update.getGradient()] =
          dyn_cast<BlockArgument>(update.getInits()[0]);
  }
  // A gradient's scaling by a constant (fp16's unscaling) is linear: it
  // runs once, on the sum, with the optimizer (as GradScaler unscales once
  // per step), instead of on a copy of every micro-batch's gradient.
  for (size_t i = 0; i < gradients.size(); ++i) {
    auto scaling = gradients[i].getDefiningOp<ONNXMulOp>();
    if (!scaling || !gradients[i].hasOneUse())
      continue;
    Value scaled = scaling.getA(), factor = scaling.getB();
    Operation *constant = factor.getDefiningOp();
    if (!constant || !constant->hasTrait<OpTrait::ConstantLike>() ||
        scaled.getType() != gradients[i].getType())
      continue;
    llvm::erase(backward, scaling.getOperation());
    optimizer.insert(optimizer.begin(), scaling);
    parameterOf[scaled] = parameterOf.lookup(gradients[i]);
    gradients[i] = scaled;
  }
  for (BlockArgument arg : func.getArguments())
    if (!getParamKind(func, arg.getArgNumber()) &&
        !func.getArgAttr(arg.getArgNumber(),
                         VramDialect::kPipelineRecvAttrName))
      dataInputs.push_back(arg);
  return success();
}

Location PipelineScheduler::locFor(Location loc, int64_t mb) {
  std::string suffix = "/mb" + std::to_string(mb);
  if (auto name = dyn_cast<NameLoc>(loc))
    return NameLoc::get(StringAttr::get(context, name.getName().str() + suffix),
                        name.getChildLoc());
  return NameLoc::get(StringAttr::get(context, "pipeline" + suffix), loc);
}

Value PipelineScheduler::receive(OpBuilder &builder, BlockArgument arg,
                                 int64_t mb, std::optional<Phase> phase) {
  auto from = func.getArgAttrOfType<StringAttr>(
      arg.getArgNumber(), VramDialect::kPipelineRecvAttrName);
  int64_t source = from.getValue() == kPrevious ? stage - 1 : stage + 1;
  Location loc = locFor(
      NameLoc::get(StringAttr::get(context, getValueName(arg) + "/recv")), mb);
  auto type = cast<RankedTensorType>(arg.getType());
  auto buffer = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                        type.getElementType());
  auto recv = shard::RecvOp::create(
      builder, loc, type, pipelineAxis.grid, pipelineAxis.axes, buffer,
      builder.getDenseI64ArrayAttr(source), ValueRange());
  if (phase) {
    setPhase(buffer, *phase);
    setPhase(recv, *phase);
  }
  return recv;
}

void PipelineScheduler::send(OpBuilder &builder, Value value, StringRef to,
                             int64_t mb, std::optional<Phase> phase) {
  int64_t destination = to == kNext ? stage + 1 : stage - 1;
  Location loc = locFor(
      NameLoc::get(StringAttr::get(context, getValueName(value) + "/send")),
      mb);
  auto op = shard::SendOp::create(
      builder, loc, value.getType(), pipelineAxis.grid, pipelineAxis.axes,
      value, builder.getDenseI64ArrayAttr(destination), ValueRange());
  if (phase)
    setPhase(op, *phase);
}

Value PipelineScheduler::dataOf(OpBuilder &builder, BlockArgument arg,
                                int64_t mb) {
  if (microbatches == 1)
    return arg;
  auto stacked = cast<RankedTensorType>(arg.getType());
  auto type = RankedTensorType::get(stacked.getShape().drop_front(),
                                    stacked.getElementType());
  SmallVector<int64_t> offsets(stacked.getRank(), 0), sizes(stacked.getShape()),
      strides(stacked.getRank(), 1);
  offsets[0] = mb;
  sizes[0] = 1;
  return tensor::ExtractSliceOp::create(
      builder,
      locFor(NameLoc::get(StringAttr::get(context, getValueName(arg))), mb),
      type, arg, ValueRange(), ValueRange(), ValueRange(),
      builder.getDenseI64ArrayAttr(offsets),
      builder.getDenseI64ArrayAttr(sizes),
      builder.getDenseI64ArrayAttr(strides));
}

void PipelineScheduler::emitPass(int64_t mb, bool isBackward) {
  Block &body = func.getBody().front();
  OpBuilder builder(body.getTerminator());
  IRMapping &mapping = mappings[mb];
  std::optional<Phase> phase =
      isBackward ? std::optional(Phase::Backward) : std::nullopt;
  for (BlockArgument arg : func.getArguments()) {
    auto from = func.getArgAttrOfType<StringAttr>(
        arg.getArgNumber(), VramDialect::kPipelineRecvAttrName);
    if (from && (from.getValue() == kNext) == isBackward)
      mapping.map(arg, receive(builder, arg, mb, phase));
    else if (!isBackward && llvm::is_contained(dataInputs, arg))
      mapping.map(arg, dataOf(builder, arg, mb));
  }
  for (Operation *op : isBackward ? backward : forward) {
    Operation *clone = builder.clone(*op, mapping);
    clone->setLoc(locFor(op->getLoc(), mb));
  }
  for (auto [value, to] : sent)
    if ((to == kPrevious) == isBackward)
      send(builder, mapping.lookup(value), to, mb, phase);
  if (!isBackward) {
    if (loss)
      losses.push_back(mapping.lookup(loss));
    return;
  }
  // The micro-batches' gradients are summed as they come, in place into
  // the first one's buffer (Megatron's main_grad).
  for (Value grad : gradients) {
    Value mine = mapping.lookup(grad);
    Value &sum = summed[grad];
    if (!sum) {
      markGradientStorage(mine);
      sum = mine;
      continue;
    }
    auto add = linalg::AddOp::create(
        builder,
        locFor(
            NameLoc::get(StringAttr::get(context, getValueName(grad) + "/sum")),
            mb),
        ValueRange{sum, mine}, ValueRange{sum});
    setPhase(add, Phase::Backward);
    sum = add->getResult(0);
  }
}

void PipelineScheduler::exchangeSharedGradients(OpBuilder &builder) {
  for (Value grad : gradients) {
    BlockArgument param = parameterOf.lookup(grad);
    auto others =
        param ? func.getArgAttrOfType<DenseI64ArrayAttr>(
                    param.getArgNumber(), VramDialect::kPipelineSharedAttrName)
              : nullptr;
    if (!others)
      continue;
    Value &sum = summed[grad];
    Location loc = NameLoc::get(
        StringAttr::get(context, getValueName(param) + "/shared_grad"));
    auto type = cast<RankedTensorType>(sum.getType());
    for (int64_t other : others.asArrayRef()) {
      auto send = shard::SendOp::create(
          builder, loc, type, pipelineAxis.grid, pipelineAxis.axes, sum,
          builder.getDenseI64ArrayAttr(other), ValueRange());
      setPhase(send, Phase::Backward);
    }
    for (int64_t other : others.asArrayRef()) {
      auto buffer = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                            type.getElementType());
      auto recv = shard::RecvOp::create(
          builder, loc, type, pipelineAxis.grid, pipelineAxis.axes, buffer,
          builder.getDenseI64ArrayAttr(other), ValueRange());
      // Into the received buffer: the sum was just sent.
      auto add = linalg::AddOp::create(builder, loc, ValueRange{sum, recv},
                                       ValueRange{recv});
      for (Operation *made :
           {buffer.getOperation(), recv.getOperation(), add.getOperation()})
        setPhase(made, Phase::Backward);
      sum = add->getResult(0);
    }
  }
}

LogicalResult PipelineScheduler::run() {
  if (failed(classify()))
    return failure();
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  // Each micro-batch's inputs: a new first axis.
  if (microbatches > 1)
    for (BlockArgument arg : dataInputs) {
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> shape{microbatches};
      llvm::append_range(shape, type.getShape());
      arg.setType(type.clone(shape));
    }
  mappings.resize(microbatches);
  // 1F1B: stage s runs stages - 1 - s forwards ahead, then one backward
  // after each forward, then the backwards left.
  int64_t warmup = std::min(stages - 1 - stage, microbatches);
  int64_t nextForward = 0, nextBackward = 0;
  for (; nextForward < warmup; ++nextForward)
    emitPass(nextForward, /*backward=*/false);
  while (nextBackward < microbatches) {
    if (nextForward < microbatches)
      emitPass(nextForward++, /*backward=*/false);
    emitPass(nextBackward++, /*backward=*/true);
  }

  OpBuilder builder(returnOp);
  exchangeSharedGradients(builder);
  IRMapping update;
  for (Value grad : gradients)
    update.map(grad, summed.lookup(grad));
  // A forward value the optimizer reads: the last micro-batch's.
  for (Operation *op : optimizer)
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp();
          producer && !getPhase(producer) &&
          !producer->hasTrait<OpTrait::ConstantLike>())
        update.map(operand, mappings.back().lookup(operand));
  Value meanScale;
  if (microbatches > 1) {
    // The update applies the mean over the micro-batches, the gradient of
    // the global batch's mean loss.
    IRBuilding ir(builder,
                  NameLoc::get(StringAttr::get(context, "pipeline/mean")));
    meanScale = ir.scalar(builder.getF32Type(), 1.0 / double(microbatches));
    setPhase(meanScale.getDefiningOp(), Phase::Optimizer);
  }
  for (Operation *op : optimizer) {
    Operation *clone = builder.clone(*op, update);
    if (auto updateOp = dyn_cast<UpdateOp>(clone); updateOp && meanScale)
      updateOp.getScaleMutable().assign(meanScale);
  }
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  if (loss) {
    IRBuilding ir(builder, NameLoc::get(StringAttr::get(context, "loss")));
    Value total = losses.front();
    for (Value other : ArrayRef(losses).drop_front())
      total = ir.add(total, other);
    if (microbatches > 1)
      total = ir.mul(total, ir.scalar(getElementTypeOrSelf(total.getType()),
                                      1.0 / double(microbatches)));
    results.push_back(total);
    resultAttrs.push_back(func.getResultAttrDict(0));
  }
  for (auto [index, operand] : llvm::enumerate(returnOp.getOperands())) {
    Operation *producer = operand.getDefiningOp();
    if (!producer || getPhase(producer) != Phase::Optimizer)
      continue;
    results.push_back(update.lookup(operand));
    resultAttrs.push_back(func.getResultAttrDict(index));
  }
  returnOp->setOperands(results);

  // The one micro-batch's step goes.
  for (Operation *op : llvm::reverse(optimizer))
    op->erase();
  for (Operation *op : llvm::reverse(backward)) {
    op->dropAllUses();
    op->erase();
  }
  for (Operation *op : llvm::reverse(forward)) {
    op->dropAllUses();
    op->erase();
  }
  llvm::BitVector received(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), VramDialect::kPipelineRecvAttrName))
      received.set(arg.getArgNumber());
  if (failed(func.eraseArguments(received)))
    return failure();
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

LogicalResult schedulePipeline(func::FuncOp func) {
  DictionaryAttr stageAttr = getStageAttr(func);
  if (!stageAttr)
    return success();
  return PipelineScheduler(func, stageAttr).run();
}

} // namespace vram
