//===- vram-translate.cpp - mlir-translate with the ONNX importer ---------===//
//
// Upstream's translations plus `--import-onnx`: an ONNX model (binary or
// text) in, the onnx dialect out, e.g.
//   vram-translate --import-onnx --onnx-batch=8 model.onnx | vram-opt ...
//
//===----------------------------------------------------------------------===//

#include "vram/InitAll.h"

#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  vram::registerAllTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv,
                              "vram-translate: MLIR translations "
                              "and the ONNX importer\n"));
}
