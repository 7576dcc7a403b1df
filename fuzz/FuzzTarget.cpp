//===- FuzzTarget.cpp - what the fuzz targets share -----------------------===//

#include "FuzzTarget.h"

#include "vram/Analysis/CostModel.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

using namespace mlir;

const DialectRegistry &vram::fuzz::getRegistry() {
  static const DialectRegistry *registry = [] {
    vram::registerVramPasses();
    vram::registerVramPipelines();
    auto *registry = new DialectRegistry();
    registerAllDialects(*registry);
    registerAllExtensions(*registry);
    registry->insert<vram::ONNXDialect, vram::VramDialect>();
    vram::registerCostModelExternalModels(*registry);
    return registry;
  }();
  return *registry;
}

OwningOpRef<ModuleOp> vram::fuzz::importInput(const uint8_t *data, size_t size,
                                              MLIRContext &context) {
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  vram::ONNXImportOptions options;
  options.batchSize = size % 2 ? 3 : 1;
  return vram::importONNX(bytes, vram::looksLikeONNXText(bytes), "fuzz",
                          &context, options);
}
