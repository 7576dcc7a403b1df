//===- TrainingStep.cpp - builds a training step from a forward pass ------===//
//
// forward (optionally in half precision) -> loss -> backward by reverse-mode
// differentiation over the block (GradientOpInterface) -> optimizer update.
// Everything is onnx ops in one block, in execution order, so the memory
// analysis sees what a training step really keeps alive.
//
//===----------------------------------------------------------------------===//

#include "vram/Training/TrainingStep.h"
#include "vram/Training/GradientOpInterface.h"
#include "vram/Training/IRBuilding.h"

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace vram {
namespace {

constexpr llvm::StringLiteral kParamAttr = "vram.param";
constexpr llvm::StringLiteral kPhaseAttr = "vram.phase";
constexpr llvm::StringLiteral kCategoryAttr = "vram.category";
constexpr llvm::StringLiteral kNameAttr = "onnx.name";

/// Tags every op built while it listens with `vram.phase = <phase>` and
/// remembers them (to check what a gradient rule reads).
class PhaseTagger : public OpBuilder::Listener {
public:
  explicit PhaseTagger(StringAttr phase) : phase(phase) {}
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    op->setAttr(kPhaseAttr, phase);
    built.push_back(op);
  }
  SmallVector<Operation *> built;

private:
  StringAttr phase;
};

bool isHalf(PrecisionKind precision) {
  return precision != PrecisionKind::FP32;
}
bool isMixed(PrecisionKind precision) {
  return precision == PrecisionKind::AmpFP16 ||
         precision == PrecisionKind::AmpBF16;
}
bool usesLossScaling(PrecisionKind precision) {
  return precision == PrecisionKind::FP16 ||
         precision == PrecisionKind::AmpFP16;
}

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

/// Moves the forward pass to `half`: every f32 value becomes half. With
/// `keepMasterWeights` the arguments stay f32 and are cast on entry (fp32
/// master weights); the casts are real ops, so both copies are counted.
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
    if (!keepMasterWeights) {
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

/// The loss and the gradient of the prediction (the seed of the backward
/// pass), built in the forward and backward phases respectively.
struct Loss {
  Value value;
  Value predictionGradient;
};

FailureOr<Loss> buildLoss(func::FuncOp func, Value prediction,
                          const TrainingOptions &options, OpBuilder &builder,
                          PhaseTagger &backwardTagger) {
  MLIRContext *context = func.getContext();
  Location loc = NameLoc::get(StringAttr::get(context, "loss"));
  IRBuilding ir(builder, loc);
  // The loss is computed in fp32 even when the forward is in half (as
  // autocast does), so that the step reports a precise value.
  Type f32 = builder.getF32Type();
  Type predictionElement = getElementTypeOrSelf(prediction.getType());
  Value logits = isMixed(options.precision) ? ir.cast(prediction, f32)
                                            : prediction;
  auto predType = cast<RankedTensorType>(logits.getType());
  Type element = predType.getElementType();

  int64_t rank = predType.getRank();
  bool crossEntropy = options.loss == LossKind::CrossEntropy;
  if (crossEntropy && rank < 2)
    return emitError(prediction.getLoc())
           << "cross-entropy needs a prediction with a class axis (rank >= 2), "
              "got "
           << predType;
  int64_t classAxis = options.classAxisLast ? rank - 1 : 1;
  bool indexLabels =
      crossEntropy && options.indexLabels.value_or(rank >= 3);

  // The labels: a new argument after the batch inputs; index labels have
  // the prediction's shape without the class axis.
  Type labelType = predType;
  if (indexLabels) {
    SmallVector<int64_t> labelShape(predType.getShape());
    labelShape.erase(labelShape.begin() + classAxis);
    labelType = RankedTensorType::get(labelShape, builder.getI64Type());
  }
  unsigned labelIndex = func.getNumArguments();
  if (failed(func.insertArgument(labelIndex, labelType,
                                 builder.getDictionaryAttr(builder.getNamedAttr(
                                     kNameAttr, builder.getStringAttr("labels"))),
                                 func.getLoc())))
    return failure();
  Value labels = func.getArgument(labelIndex);

  SmallVector<int64_t> allAxes(predType.getRank());
  std::iota(allAxes.begin(), allAxes.end(), 0);
  double count = double(predType.getNumElements());
  Loss loss;
  Value gradient;
  if (options.loss == LossKind::MeanSquaredError) {
    // mean((p - t)^2); d/dp = 2 (p - t) / n
    Value diff = ir.sub(logits, labels);
    loss.value =
        ir.reduceMean(ir.mul(diff, diff), allAxes, /*keepdims=*/false);
    builder.setListener(&backwardTagger);
    gradient = ir.mul(diff, ir.scalar(element, 2.0 / count));
  } else {
    // Rows of classes: the class axis moved last, the rest flattened (a
    // view when the class axis is already last).
    int64_t classes = predType.getDimSize(classAxis);
    int64_t rows = predType.getNumElements() / classes;
    SmallVector<int64_t> classesLast(rank);
    std::iota(classesLast.begin(), classesLast.end(), 0);
    classesLast.erase(classesLast.begin() + classAxis);
    classesLast.push_back(classAxis);
    SmallVector<int64_t> movedShape;
    for (int64_t d : classesLast)
      movedShape.push_back(predType.getDimSize(d));
    auto toRows = [&](Value value) {
      if (classAxis != rank - 1)
        value = ir.transpose(value, classesLast);
      return rank == 2 ? value : ir.reshape(value, {rows, classes});
    };
    Value target;
    // The number of positions the mean is over: all rows, or, with index
    // labels, those not equal to ignore-index (known at run time).
    Value positions = ir.scalar(element, double(rows));
    if (indexLabels) {
      // One-hot rows, all zero where the label is ignored: scatter the
      // position's weight (1, or 0 when ignored) at its class.
      Type i64 = builder.getI64Type();
      Value indices = ir.reshape(labels, {rows, 1});
      Value offset = ir.sub(indices, ir.scalar(i64, double(options.ignoreIndex)));
      Value counted = ir.greater(ir.mul(offset, offset), ir.scalar(i64, 0.0));
      Value weight = ir.cast(counted, element);
      auto oneHotType = RankedTensorType::get({rows, classes}, element);
      target = ir.scatterAdd(ir.zeros(oneHotType),
                             ir.where(counted, indices, ir.scalar(i64, 0.0)),
                             weight, /*axis=*/1);
      positions = ir.reduceSum(weight, {0, 1}, /*keepdims=*/false);
    } else {
      target = toRows(labels);
    }
    // -sum(t log softmax(p)) / positions; d/dp = (softmax(p) sum_c(t) - t) /
    // positions, the familiar (softmax(p) - t) / N when each row of t sums
    // to 1; soft labels need not, and ignored rows sum to 0.
    Value probabilities = ir.softmax(toRows(logits), 1);
    Value summed = ir.reduceSum(ir.mul(target, ir.log(probabilities)), {0, 1},
                                /*keepdims=*/false);
    loss.value = ir.neg(ir.div(summed, positions));
    builder.setListener(&backwardTagger);
    Value scaledProbabilities = ir.mul(
        probabilities, ir.reduceSum(target, {1}, /*keepdims=*/true));
    gradient = ir.div(ir.sub(scaledProbabilities, target), positions);
    if (rank != 2)
      gradient = ir.reshape(gradient, movedShape);
    if (classAxis != rank - 1) {
      SmallVector<int64_t> inverse(rank);
      for (auto [i, d] : llvm::enumerate(classesLast))
        inverse[d] = i;
      gradient = ir.transpose(gradient, inverse);
    }
  }
  if (usesLossScaling(options.precision))
    gradient = ir.mul(gradient, ir.scalar(element, options.lossScale));
  loss.predictionGradient = ir.cast(gradient, predictionElement);
  return loss;
}

/// The values whose gradient the step needs: those that depend on a
/// trainable parameter and that the prediction depends on.
llvm::DenseSet<Value> findActiveValues(ArrayRef<Operation *> forward,
                                       ArrayRef<BlockArgument> trainable,
                                       Value prediction) {
  llvm::DenseSet<Value> varied(trainable.begin(), trainable.end());
  for (Operation *op : forward)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      for (Value result : op->getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
          varied.insert(result);
  llvm::DenseSet<Value> useful{prediction};
  for (Operation *op : llvm::reverse(forward))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op->getOperands())
        useful.insert(operand);
  llvm::DenseSet<Value> active;
  for (Value value : varied)
    if (useful.contains(value))
      active.insert(value);
  return active;
}

/// The ops that allocate the storage of `value` (through views).
void markGradient(Value value) {
  while (Operation *producer = value.getDefiningOp()) {
    if (!isBackwardOp(producer))
      return;
    producer->setAttr(kCategoryAttr,
                      StringAttr::get(producer->getContext(), "gradient"));
    auto view = dyn_cast<ViewLikeOpInterface>(producer);
    if (!view)
      return;
    value = view.getViewSource();
  }
}

class TrainingStepBuilder {
public:
  TrainingStepBuilder(func::FuncOp func, const TrainingOptions &options)
      : func(func), options(options), context(func.getContext()),
        backwardTagger(StringAttr::get(context, "backward")),
        optimizerTagger(StringAttr::get(context, "optimizer")) {}

  LogicalResult build();

private:
  LogicalResult differentiate(ArrayRef<Operation *> forward,
                              const llvm::DenseSet<Value> &active,
                              Value prediction, Value seed);
  LogicalResult checkSavedReads(Operation *op, ArrayRef<Value> saved,
                                ArrayRef<Operation *> built);
  void buildOptimizer(ArrayRef<BlockArgument> trainable,
                      SmallVectorImpl<Value> &results,
                      SmallVectorImpl<std::string> &resultNames);
  BlockArgument addOptimizerState(BlockArgument param, StringRef suffix,
                                  Type type);

  func::FuncOp func;
  const TrainingOptions &options;
  MLIRContext *context;
  PhaseTagger backwardTagger, optimizerTagger;
  llvm::DenseMap<Value, Value> gradients;
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

BlockArgument TrainingStepBuilder::addOptimizerState(BlockArgument param,
                                                     StringRef suffix,
                                                     Type type) {
  std::string name = getValueName(param) + "." + suffix.str();
  OpBuilder builder(context);
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(
      index, type,
      builder.getDictionaryAttr(
          {builder.getNamedAttr(kNameAttr, builder.getStringAttr(name)),
           builder.getNamedAttr(kParamAttr,
                                builder.getStringAttr("optimizer_state"))}),
      func.getLoc());
  return func.getArgument(index);
}

void TrainingStepBuilder::buildOptimizer(
    ArrayRef<BlockArgument> trainable, SmallVectorImpl<Value> &results,
    SmallVectorImpl<std::string> &resultNames) {
  Block &body = func.getBody().front();
  OpBuilder builder(context);
  builder.setInsertionPoint(body.getTerminator());
  builder.setListener(&optimizerTagger);
  StringAttr parameterCategory = builder.getStringAttr("parameter");
  StringAttr stateCategory = builder.getStringAttr("optimizer_state");
  auto markAs = [](Value value, StringAttr category) {
    value.getDefiningOp()->setAttr(kCategoryAttr, category);
  };
  bool adam = options.optimizer == OptimizerKind::Adam ||
              options.optimizer == OptimizerKind::AdamW;
  // Adam's bias correction needs the step count: one f32 scalar of state.
  Value step, nextStep;
  if (adam) {
    Type f32 = builder.getF32Type();
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(
        index, RankedTensorType::get({}, f32),
        builder.getDictionaryAttr(
            {builder.getNamedAttr(kNameAttr, builder.getStringAttr("step")),
             builder.getNamedAttr(kParamAttr,
                                  builder.getStringAttr("optimizer_state"))}),
        func.getLoc());
    step = func.getArgument(index);
    IRBuilding ir(builder, NameLoc::get(builder.getStringAttr("optimizer")));
    nextStep = ir.add(step, ir.scalar(f32, 1.0));
    markAs(nextStep, stateCategory);
  }
  // Updated values are named like the arguments they replace.
  SmallVector<Value> updatedParams, updatedStates;
  SmallVector<std::string> paramNames, stateNames;
  for (BlockArgument param : trainable) {
    Value grad = gradients.lookup(param);
    if (!grad)
      continue;
    IRBuilding ir(builder, NameLoc::get(builder.getStringAttr(
                               getValueName(param) + "/update")));
    auto type = cast<RankedTensorType>(param.getType());
    Type element = type.getElementType();
    auto c = [&](double v) { return ir.scalar(element, v); };
    bool l2 = options.weightDecay != 0.0 &&
              options.optimizer != OptimizerKind::AdamW;
    if (l2)
      grad = ir.add(grad, ir.mul(param, c(options.weightDecay)));
    Value newParam;
    switch (options.optimizer) {
    case OptimizerKind::None:
      llvm_unreachable("optimizer=none builds no update");
    case OptimizerKind::SGD:
      newParam = ir.sub(param, ir.mul(grad, c(options.learningRate)));
      break;
    case OptimizerKind::Momentum: {
      // v' = mu v + g; p' = p - lr v' (PyTorch's SGD with momentum)
      BlockArgument velocity = addOptimizerState(param, "momentum", type);
      Value newVelocity =
          ir.add(ir.mul(velocity, c(options.momentum)), grad);
      markAs(newVelocity, stateCategory);
      updatedStates.push_back(newVelocity);
      stateNames.push_back(getValueName(velocity));
      newParam = ir.sub(param, ir.mul(newVelocity, c(options.learningRate)));
      break;
    }
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      BlockArgument m = addOptimizerState(param, "exp_avg", type);
      BlockArgument v = addOptimizerState(param, "exp_avg_sq", type);
      double b1 = options.beta1, b2 = options.beta2;
      Value newM = ir.add(ir.mul(m, c(b1)), ir.mul(grad, c(1.0 - b1)));
      Value newV =
          ir.add(ir.mul(v, c(b2)), ir.mul(ir.mul(grad, grad), c(1.0 - b2)));
      markAs(newM, stateCategory);
      markAs(newV, stateCategory);
      updatedStates.push_back(newM);
      updatedStates.push_back(newV);
      stateNames.push_back(getValueName(m));
      stateNames.push_back(getValueName(v));
      // p' = p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). The
      // bias corrections are f32 scalars, cast once: in bf16, 0.999 rounds
      // to 1 and 1 - b2^t would be 0.
      Type f32 = builder.getF32Type();
      auto f32Constant = [&](double v) { return ir.scalar(f32, v); };
      Value correction1 = ir.cast(
          ir.sub(f32Constant(1.0), ir.pow(f32Constant(b1), nextStep)), element);
      Value correction2 = ir.cast(
          ir.sub(f32Constant(1.0), ir.pow(f32Constant(b2), nextStep)), element);
      Value denominator =
          ir.add(ir.sqrt(ir.div(newV, correction2)), c(options.epsilon));
      Value update = ir.div(ir.div(newM, correction1), denominator);
      if (options.optimizer == OptimizerKind::AdamW &&
          options.weightDecay != 0.0)
        update = ir.add(update, ir.mul(param, c(options.weightDecay)));
      newParam = ir.sub(param, ir.mul(update, c(options.learningRate)));
      break;
    }
    }
    markAs(newParam, parameterCategory);
    updatedParams.push_back(newParam);
    paramNames.push_back(getValueName(param));
  }
  results.append(updatedParams);
  results.append(updatedStates);
  resultNames.append(paramNames);
  resultNames.append(stateNames);
  if (nextStep) {
    results.push_back(nextStep);
    resultNames.push_back("step");
  }
  builder.setListener(nullptr);
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
  if (returnOp.getNumOperands() != 1)
    return func.emitError("vram-train needs a forward pass that returns one "
                          "value (the prediction), got ")
           << returnOp.getNumOperands();
  if (failed(checkStaticShapes(func)))
    return failure();
  Value prediction = returnOp.getOperand(0);
  if (!isa<FloatType>(getElementTypeOrSelf(prediction.getType())))
    return func.emitError("the prediction must be a floating-point tensor");

  // Frozen parameters become model state: no gradient, no optimizer state.
  SmallVector<BlockArgument> trainable;
  for (BlockArgument arg : func.getArguments()) {
    auto param = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                   kParamAttr);
    if (!param || param.getValue() != "trainable")
      continue;
    if (isFrozen(getValueName(arg), options.frozen)) {
      func.setArgAttr(arg.getArgNumber(), kParamAttr,
                      StringAttr::get(context, "state"));
      continue;
    }
    trainable.push_back(arg);
  }
  if (trainable.empty())
    return func.emitError("vram-train: no trainable parameter (arguments "
                          "with vram.param = \"trainable\", not frozen)");

  if (isHalf(options.precision)) {
    Type half = (options.precision == PrecisionKind::BF16 ||
                 options.precision == PrecisionKind::AmpBF16)
                    ? Type(BFloat16Type::get(context))
                    : Type(Float16Type::get(context));
    convertToHalf(func, half, isMixed(options.precision));
  }

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  llvm::DenseSet<Value> active = findActiveValues(forward, trainable, prediction);

  OpBuilder builder(context);
  builder.setInsertionPoint(returnOp);
  FailureOr<Loss> loss =
      buildLoss(func, prediction, options, builder, backwardTagger);
  if (failed(loss))
    return failure();
  if (failed(differentiate(forward, active, prediction,
                           loss->predictionGradient)))
    return failure();

  // Gradients of the parameters, unscaled in their own precision.
  builder.setListener(&backwardTagger);
  for (BlockArgument param : trainable) {
    Value &grad = gradients[param];
    if (!grad) {
      mlir::emitWarning(func.getLoc())
          << "parameter '" << getValueName(param)
          << "' does not affect the loss: it gets no update";
      continue;
    }
    if (usesLossScaling(options.precision)) {
      IRBuilding ir(builder, NameLoc::get(builder.getStringAttr(
                                 getValueName(param) + "/unscale")));
      grad = ir.mul(grad, ir.scalar(getElementTypeOrSelf(grad.getType()),
                                    1.0 / options.lossScale));
    }
    markGradient(grad);
  }
  builder.setListener(nullptr);

  SmallVector<Value> results{loss->value};
  SmallVector<std::string> resultNames{"loss"};
  if (options.optimizer == OptimizerKind::None) {
    // No update: the step returns the gradients themselves (gradient
    // accumulation, gradient checks).
    for (BlockArgument param : trainable)
      if (Value grad = gradients.lookup(param)) {
        results.push_back(grad);
        resultNames.push_back(getValueName(param) + ".grad");
      }
  } else {
    buildOptimizer(trainable, results, resultNames);
  }
  appendRunningStatistics(forward, results, resultNames);
  returnOp->setOperands(results);
  func.setType(FunctionType::get(context, body.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  // Every result's attributes at once: the forward's (the prediction's
  // name) do not carry over.
  SmallVector<DictionaryAttr> resultAttrs;
  for (const std::string &name : resultNames)
    resultAttrs.push_back(DictionaryAttr::get(
        context, {NamedAttribute(kNameAttr, StringAttr::get(context, name))}));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace

LogicalResult buildTrainingStep(func::FuncOp func,
                                const TrainingOptions &options) {
  return TrainingStepBuilder(func, options).build();
}

} // namespace vram
