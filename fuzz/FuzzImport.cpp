//===- FuzzImport.cpp - libFuzzer target: the ONNX importer ---------------===//
//
// Parsing, validation, shape inference and folding of any byte string: the
// importer must refuse with an error, never crash, hang or read out of
// bounds.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(vram::fuzz::getRegistry());
  (void)vram::fuzz::importInput(data, size, context);
  return 0;
}
