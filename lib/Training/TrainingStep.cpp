//===- TrainingStep.cpp - builds a training step from a forward pass ------===//
//
// forward (optionally in half precision) -> loss -> backward by reverse-mode
// differentiation over the block (GradientOpInterface) -> optimizer update
// (one in-place vram.update per parameter). Everything is in one block, in
// execution order, so the memory analysis sees what a training step really
// keeps alive.
//
//===----------------------------------------------------------------------===//

#include "vram/Training/TrainingStep.h"
#include "TrainingStepParts.h"
#include "vram/Training/GradientOpInterface.h"
#include "vram/Training/IRBuilding.h"

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace vram {
using namespace training;
namespace {

/// Every tensor value must have a static shape: the step is analysed and
/// planned byte for byte.
LogicalResult checkStaticShapes(func::FuncOp func) {
  auto check = [&](Value value, Location loc) -> LogicalResult {
    if (isa<NoneType>(value.getType()))
      return success();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return emitError(loc) << "vram-train needs static shapes, got "
                            << value.getType()
                            << " (bind dynamic dimensions with --batch or "
                               "--dim)";
    return success();
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(check(arg, func.getLoc())))
      return failure();
  WalkResult result = func.walk([&](Operation *op) {
    for (Value value : op->getResults())
      if (failed(check(value, op->getLoc())))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Which neighbouring pipeline stage `arg` comes from (a null attribute
/// outside a pipeline).
StringAttr getPipelineSource(func::FuncOp func, BlockArgument arg) {
  return func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                           VramDialect::kPipelineRecvAttrName);
}

/// Moves the forward pass to `half`: every f32 value becomes half. With
/// `keepMasterWeights` the arguments stay f32 and are cast on entry (fp32
/// master weights); the casts are real ops, so both copies are counted. An
/// activation received from another pipeline stage is half either way, as
/// that stage sends it.
void convertToHalf(func::FuncOp func, Type half, bool keepMasterWeights) {
  Block &body = func.getBody().front();
  MLIRContext *context = func.getContext();
  auto toHalf = [&](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getElementType().isF32())
      return tensor.clone(half);
    return type;
  };
  int64_t halfCode = *getONNXDataType(half);
  for (Operation &op : body.without_terminator()) {
    for (Value result : op.getResults())
      result.setType(toHalf(result.getType()));
    if (auto constant = dyn_cast<ONNXConstantOp>(op)) {
      auto value = dyn_cast<DenseFPElementsAttr>(constant.getValue());
      if (value && value.getElementType().isF32()) {
        const llvm::fltSemantics &semantics =
            cast<FloatType>(half).getFloatSemantics();
        constant.setValueAttr(value.mapValues(half, [&](const APFloat &v) {
          APFloat converted = v;
          bool lost;
          converted.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
          return converted.bitcastToAPInt();
        }));
      }
    }
    if (auto castOp = dyn_cast<ONNXCastOp>(op); castOp && castOp.getTo() == 1)
      castOp.setTo(halfCode);
  }
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  for (BlockArgument arg : body.getArguments()) {
    Type halfType = toHalf(arg.getType());
    if (halfType == arg.getType())
      continue;
    if (!keepMasterWeights || getPipelineSource(func, arg)) {
      arg.setType(halfType);
      continue;
    }
    IRBuilding ir(builder, NameLoc::get(StringAttr::get(
                               context, getValueName(arg) + "/to_half")));
    Value copy = ir.cast(arg, half);
    arg.replaceAllUsesExcept(copy, copy.getDefiningOp());
  }
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 func.getResultTypes()));
}

bool isFrozen(StringRef name, ArrayRef<std::string> frozen) {
  for (const std::string &pattern : frozen) {
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
    if (!glob) {
      llvm::consumeError(glob.takeError());
      if (name == pattern)
        return true;
      continue;
    }
    if (glob->match(name))
      return true;
  }
  return false;
}

/// The forward result that gets the loss: the only one, or the one named
/// `name` (its onnx.name result attribute).
FailureOr<Value> choosePrediction(func::FuncOp func, func::ReturnOp returnOp,
                                  StringRef name) {
  unsigned count = returnOp.getNumOperands();
  if (count == 0)
    return func.emitError("vram-train needs a forward pass that returns its "
                          "prediction");
  if (name.empty()) {
    if (count == 1)
      return returnOp.getOperand(0);
    InFlightDiagnostic diag = func.emitError()
                              << "the forward returns " << count
                              << " values; choose the one that gets the loss "
                                 "with output=NAME (one of";
    for (unsigned i = 0; i < count; ++i)
      if (auto attr = func.getResultAttrOfType<StringAttr>(i, kNameAttr))
        diag << " '" << attr.getValue() << "'";
    diag << ")";
    return failure();
  }
  for (unsigned i = 0; i < count; ++i)
    if (auto attr = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
        attr && attr.getValue() == name)
      return returnOp.getOperand(i);
  return func.emitError() << "output=" << name
                          << ": the forward has no result of that name";
}

/// Ops whose results do not change when their inputs change infinitesimally:
/// random draws shaped like their input (the stochastic depth and dropout
/// masks of dynamo exports) and piecewise-constant functions. Autograd gives
/// them zero gradients; here they simply carry no derivative.
bool hasZeroDerivative(Operation *op) {
  auto node = dyn_cast<ONNXNodeOp>(op);
  return node && node.getDomain().empty() &&
         llvm::is_contained({"RandomUniformLike", "RandomNormalLike",
                             "Bernoulli", "EyeLike", "Floor", "Ceil", "Round",
                             "Sign"},
                            node.getOpType());
}

/// Whether a derivative can flow from `result` back into its op's operands:
/// only floating-point results of ops with a derivative carry one (a mask
/// computed by a comparison does not).
bool carriesDerivative(OpResult result) {
  return isa<FloatType>(getElementTypeOrSelf(result.getType())) &&
         !hasZeroDerivative(result.getDefiningOp());
}

/// The values whose gradient the step needs: those that depend on a
/// trainable parameter and that the prediction depends on differentiably.
llvm::DenseSet<Value> findActiveValues(ArrayRef<Operation *> forward,
                                       ArrayRef<BlockArgument> trainable,
                                       Value prediction) {
  llvm::DenseSet<Value> varied(trainable.begin(), trainable.end());
  for (Operation *op : forward)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (OpResult result : op->getResults())
        if (carriesDerivative(result))
          varied.insert(result);
  llvm::DenseSet<Value> useful{prediction};
  for (Operation *op : llvm::reverse(forward))
    if (llvm::any_of(op->getResults(), [&](OpResult result) {
          return useful.contains(result) && carriesDerivative(result);
        }))
      for (Value operand : op->getOperands())
        useful.insert(operand);
  llvm::DenseSet<Value> active;
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
  return active;
}

class TrainingStepBuilder {
public:
  TrainingStepBuilder(func::FuncOp func, const TrainingOptions &options)
      : func(func), options(options), context(func.getContext()),
        backwardTagger(Phase::Backward), optimizerTagger(Phase::Optimizer) {}

  LogicalResult build();

private:
  LogicalResult differentiate(ArrayRef<Operation *> forward,
                              const llvm::DenseSet<Value> &active,
                              Value prediction, Value seed);
  LogicalResult checkSavedReads(Operation *op, ArrayRef<Value> saved,
                                ArrayRef<Operation *> built);
  /// Rebuilds in backward the forward values that cheap ops compute from
  /// what backward keeps anyway, so the forward need not keep them.
  void recomputeCheapSavedValues(ArrayRef<Operation *> forward);
  /// Keeps the masks backward tests forward values with instead of the
  /// values, where backward reads them for nothing else.
  void keepMasksInsteadOfValues(ArrayRef<Operation *> forward);
  /// Unscales each parameter's gradient and, unless the optimizer is none,
  /// updates the parameter where the placement says; appends the step's
  /// results after the loss (the gradients when there is no optimizer).
  void finishGradients(ArrayRef<BlockArgument> trainable,
                       SmallVectorImpl<Value> &results,
                       SmallVectorImpl<std::string> &names);
  void buildUpdate(OpBuilder &builder, BlockArgument param, Value grad,
                   Value scale);
  /// The factor that brings the global norm of the gradients the update
  /// applies (with accumulation, the mean over the micro-batches) to
  /// clip-norm.
  Value buildClipScale(OpBuilder &builder,
                       ArrayRef<std::pair<BlockArgument, Value>> finished);
  /// A new argument: one the step updates in place, with `vram.param =
  /// kind`, or without a kind a data input.
  BlockArgument addArgument(StringRef name, Type type,
                            std::optional<ParamKind> kind);
  /// The persistent buffer `param`'s gradients accumulate in.
  BlockArgument getAccumulator(BlockArgument param);

  func::FuncOp func;
  const TrainingOptions &options;
  MLIRContext *context;
  PhaseTagger backwardTagger, optimizerTagger;
  llvm::DenseMap<Value, Value> gradients;
  SmallVector<UpdateOp> updates;
  llvm::DenseMap<BlockArgument, BlockArgument> accumulators;
  /// The counted step number Adam's bias corrections read (micro-batches
  /// with accumulation).
  Value stepCount;
};

LogicalResult TrainingStepBuilder::differentiate(
    ArrayRef<Operation *> forward, const llvm::DenseSet<Value> &active,
    Value prediction, Value seed) {
  Block &body = func.getBody().front();
  // What each rule keeps, decided in the forward pass.
  llvm::DenseMap<Operation *, SmallVector<Value>> savedOf;
  llvm::DenseMap<Operation *, SmallVector<bool>> wantedOf;
  for (Operation *op : forward) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    auto gradientOp = dyn_cast<GradientOpInterface>(op);
    if (!gradientOp)
      return op->emitError() << "'" << op->getName()
                             << "' has no gradient (node '" << getOpName(op)
                             << "'): vram-train cannot differentiate it";
    SmallVector<bool> wanted;
    for (Value operand : op->getOperands())
      wanted.push_back(active.contains(operand));
    OpBuilder builder(context);
    builder.setInsertionPointAfter(op);
    FailureOr<SmallVector<Value>> saved =
        gradientOp.saveForBackward(builder, wanted);
    if (failed(saved))
      return failure();
    savedOf[op] = std::move(*saved);
    wantedOf[op] = std::move(wanted);
  }

  OpBuilder builder(context);
  builder.setInsertionPoint(body.getTerminator());
  builder.setListener(&backwardTagger);
  gradients[prediction] = seed;
  for (Operation *op : llvm::reverse(forward)) {
    auto it = wantedOf.find(op);
    if (it == wantedOf.end())
      continue;
    SmallVector<Value> resultGradients;
    for (Value result : op->getResults())
      resultGradients.push_back(gradients.lookup(result));
    if (llvm::all_of(resultGradients, [](Value g) { return !g; }))
      continue;
    size_t firstBuilt = backwardTagger.built.size();
    FailureOr<SmallVector<Value>> operandGradients =
        cast<GradientOpInterface>(op).buildGradient(builder, savedOf[op],
                                                    resultGradients,
                                                    it->second);
    if (failed(operandGradients))
      return failure();
    if (failed(checkSavedReads(
            op, savedOf[op],
            ArrayRef(backwardTagger.built).drop_front(firstBuilt))))
      return failure();
    for (auto [operand, grad, wanted] :
         llvm::zip(op->getOperands(), *operandGradients, it->second)) {
      if (!grad || !wanted)
        continue;
      Value &sum = gradients[operand];
      // A value read twice (a residual connection) sums its gradients.
      sum = sum ? IRBuilding(builder, op->getLoc()).add(sum, grad) : grad;
    }
  }
  builder.setListener(nullptr);
  return success();
}

LogicalResult
TrainingStepBuilder::checkSavedReads(Operation *op, ArrayRef<Value> saved,
                                     ArrayRef<Operation *> built) {
  for (Operation *backward : built)
    for (Value operand : backward->getOperands()) {
      if (isa<BlockArgument>(operand))
        continue;
      Operation *producer = operand.getDefiningOp();
      if (isBackwardOp(producer) ||
          producer->hasTrait<OpTrait::ConstantLike>() ||
          llvm::is_contained(saved, operand))
        continue;
      return op->emitError()
             << "internal error: the gradient of '" << op->getName()
             << "' reads a forward value it did not declare in "
                "saveForBackward";
    }
  return success();
}

/// Ops cheap enough to run again in backward: activations and
/// normalizations, each a pass over its operands (AOTAutograd's min-cut
/// partitioner recomputes the same kinds of ops).
static bool isCheapToRecompute(Operation *op) {
  return isa<ONNXGeluOp, ONNXSwishOp, ONNXSigmoidOp, ONNXTanhOp, ONNXErfOp,
             ONNXReluOp, ONNXLeakyReluOp, ONNXHardSigmoidOp, ONNXHardSwishOp,
             ONNXLayerNormalizationOp>(op);
}

void TrainingStepBuilder::recomputeCheapSavedValues(
    ArrayRef<Operation *> forward) {
  // A forward value backward reads stays alive across the boundary. When
  // a cheap op computed it only from values that stay alive anyway (read by
  // backward too, or arguments and constants, which live throughout),
  // running the op again in backward keeps nothing more and frees the
  // value after its last forward use: the decomposed and fused activations
  // of transformers (the GELU output the next MatMul keeps for its weight
  // gradient, LayerNorm's output the Q/K/V projections keep) are rebuilt
  // from the input their own gradient keeps.
  auto readByBackward = [](Value value) {
    return llvm::any_of(value.getUsers(), [](Operation *user) {
      return isBackwardOp(user);
    });
  };
  auto keptAnyway = [&](Value value) {
    // A tensor-parallel copy is a view: of a parameter (sequence
    // parallelism's LayerNorm scales), kept like the parameter.
    while (auto copy = value.getDefiningOp<TensorParallelCopyOp>())
      value = copy.getInput();
    Operation *producer = value.getDefiningOp();
    return !producer || producer->hasTrait<OpTrait::ConstantLike>() ||
           isa<NoneType>(value.getType()) || readByBackward(value);
  };
  for (Operation *op : forward) {
    if (!isCheapToRecompute(op) || !isMemoryEffectFree(op) ||
        !llvm::all_of(op->getOperands(), keptAnyway))
      continue;
    // Backward readers get the copy; forward readers keep the original,
    // which then dies at the last of them. A tensor-parallel layer reads
    // the value through vram.tensor_parallel_copy (a view), or with
    // sequence parallelism through an all-gather of the tokens: its
    // backward readers get a copy of the view of the copy, or gather the
    // copy again (as Megatron-LM does rather than keep the gathered input).
    SmallVector<std::pair<OpOperand *, Operation *>> backwardUses;
    for (OpResult result : op->getResults())
      for (OpOperand &use : result.getUses()) {
        Operation *view = use.getOwner();
        if (isBackwardOp(view))
          backwardUses.push_back({&use, nullptr});
        else if (isa<TensorParallelCopyOp, shard::AllGatherOp>(view))
          for (OpOperand &viewUse : view->getUses())
            if (isBackwardOp(viewUse.getOwner()))
              backwardUses.push_back({&viewUse, view});
      }
    if (backwardUses.empty())
      continue;
    Operation *first = backwardUses.front().first->getOwner();
    for (auto [use, view] : backwardUses)
      if (use->getOwner()->isBeforeInBlock(first))
        first = use->getOwner();
    OpBuilder builder(first);
    Operation *clone = builder.clone(*op);
    setPhase(clone, Phase::Backward);
    llvm::DenseMap<Operation *, Operation *> viewClones;
    for (auto [use, view] : backwardUses) {
      if (!view) {
        use->set(
            clone->getResult(cast<OpResult>(use->get()).getResultNumber()));
        continue;
      }
      Operation *&viewClone = viewClones[view];
      if (!viewClone) {
        IRMapping mapping;
        mapping.map(op->getResults(), clone->getResults());
        viewClone = builder.clone(*view, mapping);
        setPhase(viewClone, Phase::Backward);
      }
      use->set(viewClone->getResult(0));
    }
  }
}

void TrainingStepBuilder::keepMasksInsteadOfValues(
    ArrayRef<Operation *> forward) {
  // The ReLU and LeakyReLU gradients ask only `y > 0` of what they keep.
  // When nothing else in backward reads y, comparing in forward, right
  // after y is made, keeps a one-byte mask across the boundary instead of
  // y itself, which then dies at its last forward use (the pooled ReLU
  // outputs of VGG and of a ResNet's stem; PyTorch's Inductor keeps such
  // masks as bits).
  for (Operation *op : forward)
    for (Value value : op->getResults()) {
      SmallVector<ONNXGreaterOp> tests;
      bool onlyTested = true;
      for (Operation *user : value.getUsers()) {
        if (!isBackwardOp(user))
          continue;
        auto test = dyn_cast<ONNXGreaterOp>(user);
        if (test && test.getA() == value && test.getB() != value &&
            test.getB().getDefiningOp() &&
            test.getB().getDefiningOp()->hasTrait<OpTrait::ConstantLike>())
          tests.push_back(test);
        else
          onlyTested = false;
      }
      if (!onlyTested || tests.empty())
        continue;
      Operation *last = op;
      for (ONNXGreaterOp test : tests) {
        OpBuilder builder(last->getContext());
        builder.setInsertionPointAfter(last);
        Operation *original = test.getB().getDefiningOp();
        Operation *threshold = builder.clone(*original);
        threshold->removeAttr(VramDialect::kPhaseAttrName);
        test->moveAfter(threshold);
        test->removeAttr(VramDialect::kPhaseAttrName);
        test.getBMutable().assign(threshold->getResult(0));
        if (original->use_empty())
          original->erase();
        last = test;
      }
    }
}

BlockArgument TrainingStepBuilder::addArgument(StringRef name, Type type,
                                               std::optional<ParamKind> kind) {
  OpBuilder builder(context);
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type,
                            builder.getDictionaryAttr(builder.getNamedAttr(
                                kNameAttr, builder.getStringAttr(name))),
                            func.getLoc());
  if (kind)
    setParamKind(func, index, *kind);
  return func.getArgument(index);
}

BlockArgument TrainingStepBuilder::getAccumulator(BlockArgument param) {
  BlockArgument &accumulator = accumulators[param];
  if (!accumulator)
    accumulator = addArgument(getValueName(param) + ".grad", param.getType(),
                              ParamKind::Gradient);
  return accumulator;
}

/// The op after which `param` can be updated in place: the latest of its
/// gradient's producer and every op reading the parameter's storage
/// (directly or through views), so that no read sees the new value.
static Operation *findUpdatePoint(BlockArgument param, Value grad) {
  Operation *latest = grad.getDefiningOp();
  forEachStorageUser(param, [&](Operation *user) {
    if (!latest || latest->isBeforeInBlock(user))
      latest = user;
    return true;
  });
  return latest;
}

static UpdateRule getUpdateRule(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::SGD:
    return UpdateRule::SGD;
  case OptimizerKind::Momentum:
    return UpdateRule::Momentum;
  case OptimizerKind::Adam:
    return UpdateRule::Adam;
  case OptimizerKind::AdamW:
    return UpdateRule::AdamW;
  case OptimizerKind::None:
    break;
  }
  llvm_unreachable("optimizer=none builds no update");
}

Value TrainingStepBuilder::buildClipScale(
    OpBuilder &builder, ArrayRef<std::pair<BlockArgument, Value>> finished) {
  // PyTorch's clip_grad_norm_: scale = min(1, max_norm / (norm + 1e-6)),
  // the norm summed in f32 over every gradient; accumulating, over the
  // sums with this micro-batch's (the norm of the mean is theirs / N).
  IRBuilding ir(builder, NameLoc::get(builder.getStringAttr("clip-norm")));
  Type f32 = builder.getF32Type();
  bool accumulates = options.accumulate > 1;
  Value sumOfSquares;
  for (auto [param, grad] : finished) {
    Value wide =
        ir.cast(accumulates ? ir.add(getAccumulator(param), grad) : grad, f32);
    auto rank = cast<RankedTensorType>(wide.getType()).getRank();
    SmallVector<int64_t> axes(rank);
    std::iota(axes.begin(), axes.end(), 0);
    Value squares = ir.reduceSum(ir.mul(wide, wide), axes, /*keepDims=*/false);
    sumOfSquares = sumOfSquares ? ir.add(sumOfSquares, squares) : squares;
  }
  Value norm = ir.sqrt(sumOfSquares);
  if (accumulates)
    norm = ir.mul(norm, ir.scalar(f32, 1.0 / double(options.accumulate)));
  Value guarded = ir.add(norm, ir.scalar(f32, 1e-6));
  Value factor = ir.div(ir.scalar(f32, options.clipNorm), guarded);
  Value one = ir.scalar(f32, 1.0);
  return ir.where(ir.greater(factor, one), one, factor);
}

void TrainingStepBuilder::finishGradients(ArrayRef<BlockArgument> trainable,
                                          SmallVectorImpl<Value> &results,
                                          SmallVectorImpl<std::string> &names) {
  Block &body = func.getBody().front();
  bool inBackward = options.placement == UpdatePlacement::InBackward &&
                    options.optimizer != OptimizerKind::None;
  OpBuilder builder(context);
  // Where each parameter's gradient is finished (unscaled) and used.
  SmallVector<std::pair<BlockArgument, Value>> finished;
  for (BlockArgument param : trainable) {
    Value grad = gradients.lookup(param);
    if (!grad) {
      // As in PyTorch, where such a tensor gets no .grad and the optimizer
      // no state for it (exporters store constants such as attention masks
      // as float initializers, which import as trainable).
      mlir::emitWarning(func.getLoc())
          << "parameter '" << getValueName(param)
          << "' does not affect the loss: it gets no update and counts as "
             "model state";
      setParamKind(func, param.getArgNumber(), ParamKind::State);
      continue;
    }
    if (inBackward)
      builder.setInsertionPointAfter(findUpdatePoint(param, grad));
    else
      builder.setInsertionPoint(body.getTerminator());
    builder.setListener(&backwardTagger);
    if (usesLossScaling(options.precision)) {
      IRBuilding ir(builder, NameLoc::get(builder.getStringAttr(
                                 getValueName(param) + "/unscale")));
      grad = ir.mul(grad, ir.scalar(getElementTypeOrSelf(grad.getType()),
                                    1.0 / options.lossScale));
    }
    markGradientStorage(grad);
    finished.push_back({param, grad});
    if (inBackward)
      buildUpdate(builder, param, grad, /*scale=*/nullptr);
  }
  builder.setListener(nullptr);

  if (options.optimizer == OptimizerKind::None) {
    // No update: the step returns the gradients themselves (gradient
    // accumulation, gradient checks).
    for (auto [param, grad] : finished) {
      results.push_back(grad);
      names.push_back(getValueName(param) + ".grad");
    }
    return;
  }
  if (!inBackward) {
    builder.setInsertionPoint(body.getTerminator());
    builder.setListener(&optimizerTagger);
    Value scale;
    if (options.clipNorm > 0.0)
      scale = buildClipScale(builder, finished);
    for (auto [param, grad] : finished)
      buildUpdate(builder, param, grad, scale);
    builder.setListener(nullptr);
  }
  // The step is counted before the first update reads it.
  if (stepCount) {
    Operation *first = nullptr;
    for (UpdateOp update : updates)
      if (!first || update->isBeforeInBlock(first))
        first = update;
    stepCount.getDefiningOp()->moveBefore(first);
  }

  // Results: the parameters, their state, the step count; each one the
  // buffer of the argument it is named after.
  SmallVector<Value> states;
  SmallVector<std::string> stateNames;
  for (UpdateOp update : updates) {
    results.push_back(update.getResult(0));
    names.push_back(getValueName(update.getInits()[0]));
    for (auto [state, init] :
         llvm::zip(update.getResults().drop_front(),
                   update.getInits().drop_front())) {
      states.push_back(state);
      stateNames.push_back(getValueName(init));
    }
  }
  results.append(states);
  names.append(stateNames);
  if (stepCount) {
    results.push_back(stepCount);
    names.push_back("step");
  }
}

void TrainingStepBuilder::buildUpdate(OpBuilder &builder, BlockArgument param,
                                      Value grad, Value scale) {
  OpBuilder::Listener *listener = builder.getListener();
  builder.setListener(&optimizerTagger);
  UpdateRule rule = getUpdateRule(options.optimizer);
  Location loc =
      NameLoc::get(builder.getStringAttr(getValueName(param) + "/update"));
  bool adam = UpdateOp::readsStepCount(rule);
  bool accumulates = options.accumulate > 1;
  if ((adam || accumulates) && !stepCount) {
    // Adam's bias correction and accumulation need the step count: one
    // f32 scalar of state, counted in place.
    auto type = RankedTensorType::get({}, builder.getF32Type());
    BlockArgument step = addArgument("step", type, ParamKind::OptimizerState);
    stepCount = IncrementOp::create(
        builder, NameLoc::get(builder.getStringAttr("step")), step);
  }
  // With master weights the state is f32, beginning with the master copy.
  bool master = hasMasterWeights(options.precision);
  auto paramType = cast<RankedTensorType>(param.getType());
  Type stateType =
      master ? paramType.clone(builder.getF32Type()) : Type(paramType);
  SmallVector<Value> inits{param};
  SmallVector<StringRef> stateNames;
  if (master)
    stateNames.push_back("master");
  llvm::append_range(stateNames, UpdateOp::getStateNames(rule));
  for (StringRef state : stateNames)
    inits.push_back(addArgument(getValueName(param) + "." + state.str(),
                                stateType, ParamKind::OptimizerState));
  if (accumulates)
    inits.push_back(getAccumulator(param));
  // Only the hyperparameters of the rule; the others keep their defaults
  // and stay out of the printed IR.
  auto f64 = [&](double value, bool used) {
    return used ? builder.getF64FloatAttr(value) : FloatAttr();
  };
  bool momentum = rule == UpdateRule::Momentum;
  updates.push_back(UpdateOp::create(
      builder, loc, UpdateRuleAttr::get(context, rule),
      f64(options.learningRate, true), f64(options.momentum, momentum),
      f64(options.beta1, adam), f64(options.beta2, adam),
      f64(options.epsilon, adam),
      f64(options.weightDecay, options.weightDecay != 0.0),
      accumulates ? builder.getI64IntegerAttr(options.accumulate)
                  : IntegerAttr(),
      master ? builder.getUnitAttr() : UnitAttr(), grad,
      adam || accumulates ? stepCount : Value(), scale, inits));
  builder.setListener(listener);
}

/// The updated running statistics of training-mode BatchNormalization are
/// results of the step (as PyTorch updates its buffers), named after the
/// state arguments they replace.
static void appendRunningStatistics(ArrayRef<Operation *> forward,
                                    SmallVectorImpl<Value> &results,
                                    SmallVectorImpl<std::string> &names) {
  for (Operation *op : forward) {
    auto norm = dyn_cast<ONNXBatchNormalizationOp>(op);
    if (!norm)
      continue;
    for (auto [updated, input] :
         {std::pair(norm.getRunningMean(), norm.getInputMean()),
          std::pair(norm.getRunningVar(), norm.getInputVar())}) {
      auto arg = dyn_cast<BlockArgument>(input);
      if (!arg || isa<NoneType>(updated.getType()))
        continue;
      results.push_back(updated);
      names.push_back(getValueName(arg));
    }
  }
}

LogicalResult TrainingStepBuilder::build() {
  if (!llvm::hasSingleElement(func.getBody()))
    return func.emitError("vram-train needs a function with one block");
  Block &body = func.getBody().front();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  FailureOr<Value> chosen = choosePrediction(func, returnOp, options.output);
  if (failed(chosen))
    return failure();
  if (failed(checkStaticShapes(func)))
    return failure();
  Value prediction = *chosen;
  if (!isa<FloatType>(getElementTypeOrSelf(prediction.getType())))
    return func.emitError("the prediction must be a floating-point tensor");

  // Frozen parameters become model state: no gradient, no optimizer state.
  SmallVector<BlockArgument> trainable;
  for (BlockArgument arg : func.getArguments()) {
    if (getParamKind(func, arg.getArgNumber()) != ParamKind::Trainable)
      continue;
    if (isFrozen(getValueName(arg), options.frozen)) {
      setParamKind(func, arg.getArgNumber(), ParamKind::State);
      continue;
    }
    trainable.push_back(arg);
  }
  if (trainable.empty())
    return func.emitError(
        "vram-train: no trainable parameter (arguments "
        "with vram.param = #vram.param<trainable>, not frozen)");

  if (isHalf(options.precision)) {
    Type half = isBF16(options.precision) ? Type(BFloat16Type::get(context))
                                          : Type(Float16Type::get(context));
    convertToHalf(func, half, keepsF32Arguments(options.precision));
  }

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  // A pipeline stage also differentiates the activation it receives: its
  // gradient goes back to the stage that sent it.
  SmallVector<BlockArgument> received, differentiated(trainable);
  for (BlockArgument arg : func.getArguments())
    if (StringAttr source = getPipelineSource(func, arg);
        source && source.getValue() != "next")
      received.push_back(arg);
  llvm::append_range(differentiated, received);
  llvm::DenseSet<Value> active =
      findActiveValues(forward, differentiated, prediction);

  OpBuilder builder(context);
  builder.setInsertionPoint(returnOp);
  // The last result of a stage before the last is its output, whose
  // gradient the next stage sends back in place of a loss.
  bool sendsOutput = func.getNumResults() == 1 &&
                     func.getResultAttr(0, VramDialect::kPipelineSendAttrName);
  SmallVector<Value> results;
  SmallVector<std::string> resultNames;
  SmallVector<StringRef> resultSends;
  Value seed;
  if (sendsOutput) {
    std::string name = getValueName(prediction);
    seed = addArgument(name + ".grad", prediction.getType(), std::nullopt);
    func.setArgAttr(cast<BlockArgument>(seed).getArgNumber(),
                    VramDialect::kPipelineRecvAttrName,
                    StringAttr::get(context, "next"));
    results.push_back(prediction);
    resultNames.push_back(name);
    resultSends.push_back("next");
  } else {
    FailureOr<Loss> loss =
        buildLoss(func, prediction, options, builder, backwardTagger);
    if (failed(loss))
      return failure();
    seed = loss->predictionGradient;
    results.push_back(loss->value);
    resultNames.push_back("loss");
    resultSends.push_back("");
  }
  if (failed(differentiate(forward, active, prediction, seed)))
    return failure();
  recomputeCheapSavedValues(forward);
  keepMasksInsteadOfValues(forward);

  for (BlockArgument arg : received) {
    Value grad = gradients.lookup(arg);
    if (!grad)
      return func.emitError()
             << "the activation '" << getValueName(arg)
             << "' received from the previous pipeline stage does not affect "
                "this stage's output differentiably";
    results.push_back(grad);
    resultNames.push_back(getValueName(arg) + ".grad");
    resultSends.push_back("previous");
  }
  finishGradients(trainable, results, resultNames);
  appendRunningStatistics(forward, results, resultNames);
  resultSends.resize(results.size());
  returnOp->setOperands(results);
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  // Every result's attributes at once: the forward's (the prediction's
  // name) do not carry over.
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [name, send] : llvm::zip(resultNames, resultSends)) {
    SmallVector<NamedAttribute> attrs{
        NamedAttribute(kNameAttr, StringAttr::get(context, name))};
    if (!send.empty())
      attrs.push_back(NamedAttribute(VramDialect::kPipelineSendAttrName,
                                     StringAttr::get(context, send)));
    resultAttrs.push_back(DictionaryAttr::get(context, attrs));
  }
  func.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace

LogicalResult buildTrainingStep(func::FuncOp func,
                                const TrainingOptions &options) {
  return TrainingStepBuilder(func, options).build();
}

} // namespace vram
