//===- Losses.cpp - the training step's loss and its gradient -------------===//
//
// Cross-entropy from LogSoftmax (index labels with an ignore index, as
// language models train, or probability labels), mean squared error, or the
// model's own scalar output; each with the seed of the backward pass, in f32
// under mixed precision and scaled where the precision uses loss scaling.
//
//===----------------------------------------------------------------------===//

#include "TrainingStepParts.h"
#include "vram/Training/IRBuilding.h"

#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace vram::training {

/// Where each row of `classes` log-probabilities starts in their flat
/// tensor, shaped like the rows' axes `rowShape`: a sum of one constant per
/// axis longer than 1, i * (the axis's stride) * classes, so that the
/// constants hold as many elements as the axes together, not one per row
/// (a batch of segmentation maps has millions of rows). An axis past
/// IRBuilding::kMaxListedElements is an error.
static FailureOr<Value> buildRowStarts(IRBuilding &ir,
                                       ArrayRef<int64_t> rowShape,
                                       int64_t classes, Location loc) {
  SmallVector<int64_t> ones(rowShape.size(), 1);
  int64_t stride = classes;
  Value starts;
  for (size_t d = rowShape.size(); d-- > 0; stride *= rowShape[d]) {
    if (rowShape[d] == 1)
      continue;
    if (rowShape[d] > IRBuilding::kMaxListedElements)
      return emitError(loc) << "the loss's row offsets need a constant of "
                            << rowShape[d] << " elements for axis " << d
                            << " of the prediction's rows; the model's "
                               "dimensions are too large to build its "
                               "training step";
    SmallVector<int64_t> shape = ones, values;
    shape[d] = rowShape[d];
    for (int64_t i = 0; i < rowShape[d]; ++i)
      values.push_back(i * stride);
    Value term = ir.int64s(shape, values);
    starts = starts ? ir.add(term, starts) : term;
  }
  // A single row starts at 0.
  return starts ? starts : ir.int64s(ones, {0});
}

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
  Value logits =
      computesLossInF32(options.precision) ? ir.cast(prediction, f32)
                                          : prediction;
  auto predType = cast<RankedTensorType>(logits.getType());
  Type element = predType.getElementType();
  if (options.loss == LossKind::Output) {
    // The model computed its loss: d loss / d output = 1.
    if (predType.getNumElements() != 1)
      return emitError(prediction.getLoc())
             << "loss=output needs a forward result with one element (the "
                "loss), got "
             << predType;
    Loss loss;
    loss.value = ir.reshape(logits, {});
    builder.setListener(&backwardTagger);
    double seed = usesLossScaling(options.precision) ? options.lossScale : 1.0;
    loss.predictionGradient =
        ir.cast(ir.splat(predType, seed), predictionElement);
    return loss;
  }

  int64_t rank = predType.getRank();
  bool crossEntropy = options.loss == LossKind::CrossEntropy;
  if (crossEntropy && rank < 2)
    return emitError(prediction.getLoc())
           << "cross-entropy needs a prediction with a class axis (rank >= 2), "
              "got "
           << predType;
  int64_t classAxis = options.classAxisLast ? rank - 1 : 1;
  bool indexLabels = crossEntropy && options.indexLabels.value_or(rank >= 3);

  // The labels: a new argument after the batch inputs; index labels have
  // the prediction's shape without the class axis.
  Type labelType = predType;
  if (indexLabels) {
    SmallVector<int64_t> labelShape(predType.getShape());
    labelShape.erase(labelShape.begin() + classAxis);
    labelType = RankedTensorType::get(labelShape, builder.getI64Type());
  }
  unsigned labelIndex = func.getNumArguments();
  if (failed(
          func.insertArgument(labelIndex, labelType,
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
    loss.value = ir.reduceMean(ir.mul(diff, diff), allAxes, /*keepdims=*/false);
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
    // LogSoftmax, not log(Softmax): the softmax of logits ~100 apart
    // underflows to 0 in f32 and its log is -inf. Backward keeps only the
    // log-probabilities, as PyTorch's cross_entropy does, and takes the
    // probabilities from them.
    Value logProbabilities = ir.logSoftmax(toRows(logits), 1);
    if (indexLabels) {
      // -sum_i w_i log softmax(p)_i,label_i / sum_i w_i, w_i = 0 where the
      // label is ignore-index (1 elsewhere); d/dp = (softmax(p) - onehot) w /
      // sum(w). No one-hot is built: the loss gathers each row's
      // log-probability, and the gradient scatters -w / sum(w) into the
      // scaled probabilities (in place).
      Type i64 = builder.getI64Type();
      Value indices = ir.reshape(labels, {rows, 1});
      Value offset =
          ir.sub(indices, ir.scalar(i64, double(options.ignoreIndex)));
      Value zero = ir.scalar(i64, 0.0);
      Value counted = ir.greater(ir.mul(offset, offset), zero);
      Value weight = ir.cast(counted, element);
      Value classIndices = ir.where(counted, indices, ir.scalar(i64, 0.0));
      FailureOr<Value> rowStarts = buildRowStarts(
          ir, ArrayRef(movedShape).drop_back(), classes, prediction.getLoc());
      if (failed(rowStarts))
        return failure();
      Value flatIndices =
          ir.add(ir.reshape(*rowStarts, {rows, 1}), classIndices);
      Value picked = ir.gather(ir.reshape(logProbabilities, {rows * classes}),
                               flatIndices, /*axis=*/0);
      Value positions = ir.reduceSum(weight, {0, 1}, /*keepdims=*/false);
      Value summed = ir.reduceSum(ir.mul(weight, picked), {0, 1},
                                  /*keepdims=*/false);
      loss.value = ir.neg(ir.div(summed, positions));
      builder.setListener(&backwardTagger);
      Value scale = ir.div(weight, positions);
      Value minusScale = ir.neg(scale);
      gradient = ir.scatterAdd(ir.mul(ir.exp(logProbabilities), scale),
                               classIndices, minusScale, /*axis=*/1);
    } else {
      // -sum(t log softmax(p)) / rows; d/dp = (softmax(p) sum_c(t) - t) /
      // rows, the familiar (softmax(p) - t) / N when each row of t sums to
      // 1; soft labels need not.
      Value target = toRows(labels);
      Value positions = ir.scalar(element, double(rows));
      Value summed = ir.reduceSum(ir.mul(target, logProbabilities), {0, 1},
                                  /*keepdims=*/false);
      loss.value = ir.neg(ir.div(summed, positions));
      builder.setListener(&backwardTagger);
      // Named in order: C++ leaves the order of arguments' evaluation, and
      // so of the ops, to the compiler.
      Value probabilities = ir.exp(logProbabilities);
      Value rowMass = ir.reduceSum(target, {1}, /*keepdims=*/true);
      Value scaledProbabilities = ir.mul(probabilities, rowMass);
      gradient = ir.div(ir.sub(scaledProbabilities, target), positions);
    }
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

} // namespace vram::training
