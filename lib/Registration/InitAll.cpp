//===- InitAll.cpp - register vram's dialects, passes, translations -------===//

#include "vram/InitAll.h"
#include "vram/Analysis/CostModel.h"
#include "vram/Conversion/Collectives/CollectiveBufferization.h"
#include "vram/Conversion/Passes.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Import/ONNXImporter.h"
#include "vram/Pipelines/GPUPipeline.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Training/GradientOpInterface.h"
#include "vram/Transforms/Passes.h"

void vram::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<ONNXDialect, VramDialect>();
  registerCostModelExternalModels(registry);
  registerGradientExternalModels(registry);
  registerCollectiveBufferizationExternalModels(registry);
}

void vram::registerAllPasses() {
  registerVramPasses();
  registerVramConversionPasses();
  registerVramPipelines();
  registerLowerToGPUPipeline();
}

void vram::registerAllTranslations() { registerImportONNXTranslation(); }
