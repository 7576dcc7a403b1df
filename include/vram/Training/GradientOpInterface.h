//===- GradientOpInterface.h - reverse-mode rules of ops --------*- C++ -*-===//

#ifndef VRAM_TRAINING_GRADIENTOPINTERFACE_H
#define VRAM_TRAINING_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include "vram/Training/GradientOpInterface.h.inc"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace vram {

/// Attaches GradientOpInterface to the onnx ops that have a derivative.
void registerGradientExternalModels(mlir::DialectRegistry &registry);

} // namespace vram

#endif // VRAM_TRAINING_GRADIENTOPINTERFACE_H
