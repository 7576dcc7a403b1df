//===- FuzzTarget.h - what the fuzz targets share ---------------*- C++ -*-===//
//
// Each target defines LLVMFuzzerTestOneInput. Built with -fsanitize=fuzzer
// (scripts/fuzz.sh, clang) libFuzzer drives it; otherwise ReplayMain.cpp
// runs it over the files given, which is how the test suite replays the
// committed corpora.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_FUZZ_FUZZTARGET_H
#define VRAM_FUZZ_FUZZTARGET_H

#include "vram/Import/ONNXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstddef>
#include <cstdint>

namespace vram::fuzz {

/// The dialects, extensions and passes vram-opt registers.
const mlir::DialectRegistry &getRegistry();

/// The input as an ONNX model: text (onnxtext) when it starts with '<' or
/// '#', else a binary ModelProto, imported with --batch=1, or --batch=3
/// when its size is odd (so that the re-binding of static batches is
/// fuzzed too). Diagnostics are swallowed; null when the importer refuses
/// it.
mlir::OwningOpRef<mlir::ModuleOp> importInput(const uint8_t *data, size_t size,
                                              mlir::MLIRContext &context);

} // namespace vram::fuzz

#endif // VRAM_FUZZ_FUZZTARGET_H
