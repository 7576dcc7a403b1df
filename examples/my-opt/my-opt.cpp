//===- my-opt.cpp - upstream's mlir-opt plus vram's dialects and passes ---===//
//
// What another project's `*-opt` needs to run vram-train, vram-plan and
// vram-verify-plan next to upstream passes: one call each for vram's
// dialects (with their external models) and passes.
//
//===----------------------------------------------------------------------===//

#include "vram/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  vram::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  vram::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "my-opt: upstream's and vram's passes\n", registry));
}
