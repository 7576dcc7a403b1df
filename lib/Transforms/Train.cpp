//===- Train.cpp - the vram-train pass ------------------------------------===//

#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Training/GradientOpInterface.h"
#include "vram/Training/TrainingStep.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

#define DEBUG_TYPE "vram-train"

namespace vram {
#define GEN_PASS_DEF_TRAINPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

namespace {
struct TrainPass : public vram::impl::TrainPassBase<TrainPass> {
  using TrainPassBase::TrainPassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    TrainPassBase::getDependentDialects(registry);
    // The rules are external models: whoever runs the pass gets them.
    registerGradientExternalModels(registry);
  }

  /// The pass options as TrainingOptions; errors name the bad option.
  FailureOr<TrainingOptions> parseOptions() {
    TrainingOptions parsed;
    auto fail = [&](StringRef option, StringRef value, StringRef expected) {
      getOperation().emitError()
          << "vram-train: invalid " << option << " '" << value
          << "', expected " << expected;
      return failure();
    };
    if (loss == "mse")
      parsed.loss = LossKind::MeanSquaredError;
    else if (loss == "cross-entropy")
      parsed.loss = LossKind::CrossEntropy;
    else if (loss == "output")
      parsed.loss = LossKind::Output;
    else
      return fail("loss", loss, "mse, cross-entropy or output");
    parsed.output = output;
    if (labels != "one-hot" && labels != "indices" && labels != "auto")
      return fail("labels", labels, "one-hot, indices or auto");
    if (labels != "auto")
      parsed.indexLabels = labels == "indices";
    if (classAxis != "last" && classAxis != "1")
      return fail("class-axis", classAxis, "last or 1");
    parsed.classAxisLast = classAxis == "last";
    parsed.ignoreIndex = ignoreIndex;
    std::optional<OptimizerKind> optimizerKind =
        llvm::StringSwitch<std::optional<OptimizerKind>>(optimizer)
            .Case("none", OptimizerKind::None)
            .Case("sgd", OptimizerKind::SGD)
            .Case("momentum", OptimizerKind::Momentum)
            .Case("adam", OptimizerKind::Adam)
            .Case("adamw", OptimizerKind::AdamW)
            .Default(std::nullopt);
    if (!optimizerKind)
      return fail("optimizer", optimizer, "none, sgd, momentum, adam or adamw");
    parsed.optimizer = *optimizerKind;
    std::optional<PrecisionKind> precisionKind =
        llvm::StringSwitch<std::optional<PrecisionKind>>(precision)
            .Case("fp32", PrecisionKind::FP32)
            .Case("fp16", PrecisionKind::FP16)
            .Case("bf16", PrecisionKind::BF16)
            .Case("amp-fp16", PrecisionKind::AmpFP16)
            .Case("amp-bf16", PrecisionKind::AmpBF16)
            .Case("master-fp16", PrecisionKind::MasterFP16)
            .Case("master-bf16", PrecisionKind::MasterBF16)
            .Default(std::nullopt);
    if (!precisionKind)
      return fail("precision", precision,
                  "fp32, fp16, bf16, amp-fp16, amp-bf16, master-fp16 or "
                  "master-bf16");
    parsed.precision = *precisionKind;
    if (update != "after-backward" && update != "in-backward")
      return fail("update", update, "after-backward or in-backward");
    parsed.placement = update == "in-backward" ? UpdatePlacement::InBackward
                                               : UpdatePlacement::AfterBackward;
    if (!(clipNorm >= 0.0) || std::isinf(clipNorm))
      return fail("clip-norm", std::to_string(clipNorm),
                  "a finite non-negative number");
    if (clipNorm > 0.0 && parsed.placement == UpdatePlacement::InBackward)
      return fail("clip-norm", std::to_string(clipNorm),
                  "no clipping with update=in-backward (the global norm "
                  "needs every gradient before the first update)");
    parsed.clipNorm = clipNorm;
    // The step count is an f32 counter: exact up to 2^24.
    if (accumulate < 1 || accumulate > (int64_t(1) << 24))
      return fail("accumulate", std::to_string(accumulate),
                  "a micro-batch count from 1 to 16777216");
    if (accumulate > 1 && parsed.optimizer == OptimizerKind::None)
      return fail("accumulate", std::to_string(accumulate),
                  "1 with optimizer=none (the step returns each "
                  "micro-batch's gradients; there is no update to defer)");
    parsed.accumulate = accumulate;
    // Hyperparameters where their rules make sense (NaN fails every test).
    auto inRange = [&](StringRef name, double value, bool valid,
                       StringRef expected) -> LogicalResult {
      if (valid && std::isfinite(value))
        return success();
      return fail(name, std::to_string(value), expected);
    };
    if (failed(inRange("lr", learningRate, learningRate >= 0,
                       "a finite non-negative number")) ||
        failed(inRange("momentum", momentum, momentum >= 0 && momentum < 1,
                       "a number in [0, 1)")) ||
        failed(inRange("beta1", beta1, beta1 >= 0 && beta1 < 1,
                       "a number in [0, 1)")) ||
        failed(inRange("beta2", beta2, beta2 >= 0 && beta2 < 1,
                       "a number in [0, 1)")) ||
        failed(
            inRange("eps", epsilon, epsilon > 0, "a finite positive number")) ||
        failed(inRange("weight-decay", weightDecay, weightDecay >= 0,
                       "a finite non-negative number")) ||
        failed(inRange("loss-scale", lossScale, lossScale > 0,
                       "a finite positive number")))
      return failure();
    parsed.learningRate = learningRate;
    parsed.momentum = momentum;
    parsed.beta1 = beta1;
    parsed.beta2 = beta2;
    parsed.epsilon = epsilon;
    // torch.optim.AdamW's default decay when none is given.
    parsed.weightDecay =
        !weightDecay.hasValue() && parsed.optimizer == OptimizerKind::AdamW
            ? 0.01
            : double(weightDecay);
    parsed.lossScale = lossScale;
    parsed.frozen.assign(frozen.begin(), frozen.end());
    return parsed;
  }

  void runOnOperation() override {
    FailureOr<TrainingOptions> options = parseOptions();
    if (failed(options))
      return signalPassFailure();
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      getOperation().emitError("vram-train needs a func.func @main with a "
                               "body (the forward pass)");
      return signalPassFailure();
    }
    if (failed(buildTrainingStep(main, *options)))
      return signalPassFailure();
  }
};
} // namespace
