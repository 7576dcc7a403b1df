//===- Gradients.cpp - reverse-mode rules of the onnx ops -----------------===//
//
// Every rule builds its gradient from real onnx ops, so the backward pass is
// analysed, planned and lowered like the forward pass. Each rule keeps the
// least the math needs (see docs/training.md for the list). The rules are in
// ViewGradients.cpp, ElementwiseGradients.cpp, LayerGradients.cpp and, for
// the ops that join tensor-parallel ranks, CollectiveGradients.cpp
// (GradientRules.h).
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

#include "vram/Dialect/ONNX/ONNXDialect.h"

#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

#include "vram/Training/GradientOpInterface.cpp.inc"

void vram::registerGradientExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, ONNXDialect *) {
    gradient_rules::attachViewGradients(context);
    gradient_rules::attachElementwiseGradients(context);
    gradient_rules::attachLayerGradients(context);
  });
  gradient_rules::attachCollectiveGradients(registry);
}
