//===- TrainingStep.h - builds a training step from a forward pass -*- C++ -*-===//

#ifndef VRAM_TRAINING_TRAININGSTEP_H
#define VRAM_TRAINING_TRAININGSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace vram {

/// Output: the model already computes its (scalar) loss.
enum class LossKind { MeanSquaredError, CrossEntropy, Output };
/// None: no update; the step returns the loss and the gradients.
enum class OptimizerKind { None, SGD, Momentum, Adam, AdamW };
/// FP16/BF16: every tensor in half. Amp*: half compute, f32 parameters cast
/// on entry (PyTorch's autocast). Master*: half parameters and gradients,
/// f32 master weights in the optimizer state (DeepSpeed's and Megatron's).
enum class PrecisionKind {
  FP32,
  FP16,
  BF16,
  AmpFP16,
  AmpBF16,
  MasterFP16,
  MasterBF16
};
/// When each parameter is updated: once the backward pass is over, or as
/// soon as its gradient is final (the gradient then dies at once).
enum class UpdatePlacement { AfterBackward, InBackward };

struct TrainingOptions {
  LossKind loss = LossKind::MeanSquaredError;
  /// Which result of the forward gets the loss (its onnx.name); needed when
  /// there are several. The others are not results of the step.
  std::string output;
  /// Cross-entropy labels: int64 class indices (the prediction's shape
  /// without the class axis) instead of one-hot rows; when unset, indices
  /// for predictions of rank >= 3 (language models), one-hot otherwise.
  std::optional<bool> indexLabels;
  /// Cross-entropy class axis: the last (language models, [batch, seq,
  /// vocabulary]) or 1 (ONNX's and PyTorch's [N, C, d1, ...]).
  bool classAxisLast = true;
  /// Index labels equal to this count for nothing (PyTorch's -100): the loss
  /// is the mean over the other positions.
  int64_t ignoreIndex = -100;
  OptimizerKind optimizer = OptimizerKind::SGD;
  PrecisionKind precision = PrecisionKind::FP32;
  double learningRate = 1e-3;
  double momentum = 0.9;
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = 1e-8;
  double weightDecay = 0.0;
  UpdatePlacement placement = UpdatePlacement::AfterBackward;
  /// Micro-batches per optimizer step (gradient accumulation): the step
  /// adds its gradients to persistent buffers and every accumulate-th call
  /// updates with their mean (1: every call updates).
  int64_t accumulate = 1;
  /// Largest global L2 norm of the gradients before the update (0: no
  /// clipping); needs every gradient, so only after the backward pass.
  double clipNorm = 0.0;
  /// Loss scale of fp16 training (1: none).
  double lossScale = 65536.0;
  /// Parameter names (onnx.name) or globs (`layer1.*`) that get no gradient.
  llvm::SmallVector<std::string> frozen;
};

/// Rewrites `func` (the forward pass, returning the prediction) in place
/// into one training step: forward, loss, backward, optimizer update. Errors
/// are emitted on the function or the op that causes them.
mlir::LogicalResult buildTrainingStep(mlir::func::FuncOp func,
                                      const TrainingOptions &options);

} // namespace vram

#endif // VRAM_TRAINING_TRAININGSTEP_H
