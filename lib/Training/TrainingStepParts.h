//===- TrainingStepParts.h - the training step's shared pieces --*- C++ -*-===//
//
// Private to lib/Training: what TrainingStep.cpp (forward, backward,
// optimizer) and Losses.cpp (the loss and its gradient) share.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_TRAINING_TRAININGSTEPPARTS_H
#define VRAM_LIB_TRAINING_TRAININGSTEPPARTS_H

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Training/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace vram::training {
using namespace mlir;

/// Names of arguments and results, as the importer sets them.
inline constexpr llvm::StringLiteral kNameAttr = "onnx.name";

/// Tags every op built while it listens with `vram.phase` and
/// remembers them (to check what a gradient rule reads).
class PhaseTagger : public OpBuilder::Listener {
public:
  explicit PhaseTagger(Phase phase) : phase(phase) {}
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    setPhase(op, phase);
    built.push_back(op);
  }
  SmallVector<Operation *> built;

private:
  Phase phase;
};

inline bool isHalf(PrecisionKind precision) {
  return precision != PrecisionKind::FP32;
}
inline bool keepsF32Arguments(PrecisionKind precision) {
  return precision == PrecisionKind::AmpFP16 ||
         precision == PrecisionKind::AmpBF16;
}
inline bool hasMasterWeights(PrecisionKind precision) {
  return precision == PrecisionKind::MasterFP16 ||
         precision == PrecisionKind::MasterBF16;
}
/// Mixed precision computes the loss in f32 from half predictions.
inline bool computesLossInF32(PrecisionKind precision) {
  return keepsF32Arguments(precision) || hasMasterWeights(precision);
}
inline bool usesLossScaling(PrecisionKind precision) {
  return precision == PrecisionKind::FP16 ||
         precision == PrecisionKind::AmpFP16 ||
         precision == PrecisionKind::MasterFP16;
}
inline bool isBF16(PrecisionKind precision) {
  return precision == PrecisionKind::BF16 ||
         precision == PrecisionKind::AmpBF16 ||
         precision == PrecisionKind::MasterBF16;
}

/// The loss and the gradient of the prediction (the seed of the backward
/// pass), built in the forward and backward phases respectively.
struct Loss {
  Value value;
  Value predictionGradient;
};

/// The loss of `prediction` (options.loss, in f32 under mixed precision)
/// built in the forward phase, and the gradient of the prediction, the seed
/// of the backward pass, built with `backwardTagger` (Losses.cpp).
FailureOr<Loss> buildLoss(func::FuncOp func, Value prediction,
                          const TrainingOptions &options, OpBuilder &builder,
                          PhaseTagger &backwardTagger);

} // namespace vram::training

#endif // VRAM_LIB_TRAINING_TRAININGSTEPPARTS_H
