//===- ONNXImporter.h - ONNX models into the onnx dialect -------*- C++ -*-===//

#ifndef VRAM_IMPORT_ONNXIMPORTER_H
#define VRAM_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace vram {

/// The opset whose operator signatures the onnx dialect's ops have; the
/// importer maps every other version of an operator onto them.
constexpr int64_t kCanonicalOpset = 17;

struct ONNXImportOptions {
  /// Values for dynamic dimensions, keyed by their ONNX `dim_param` name.
  llvm::StringMap<int64_t> dimBindings;
  /// Binds the leading dimension of the first graph input (the batch).
  std::optional<int64_t> batchSize;
  /// Integer initializers up to this many elements are read as constants
  /// (shape operands of Reshape, Slice, ...); everything else is a parameter
  /// whose data is never read.
  int64_t maxConstantElements = 1024;
  /// Rebuilds Gelu and LayerNormalization from the elementwise chains older
  /// exporters write for them (populateDecomposedOpFusionPatterns).
  bool fuseDecomposedOps = true;
  /// Values of graph inputs (serialized onnx.TensorProto), by name. An
  /// input that nodes read only where they need its value to know their
  /// results' shapes (Reshape's shape, Reduce axes, Resize scales and sizes,
  /// Pad's pads, ...) is imported as that constant; other inputs stay
  /// arguments.
  llvm::StringMap<std::string> inputValues;
  /// A directory in ONNX's backend-test layout whose `input_<i>.pb` is the
  /// value of the model's i-th data input (graph inputs that are not
  /// initializers), for the inputs `inputValues` does not name.
  std::string inputValuesDirectory;
  /// What the caller's command-line flags for the batch and the dynamic
  /// dimensions start with after `--`, for the errors that name them: empty
  /// for vram-opt's --batch and --dim, "onnx-" for vram-translate's.
  std::string flagPrefix;
};

/// Imports the ONNX model in `path` (binary `.onnx` or text `.onnxtext`) into
/// a module holding `func.func @main`. libonnx parses (and checks files up
/// to IR 8 / opset 17); the importer maps each operator version onto the
/// dialect and the ops infer their shapes; every op is located at its ONNX
/// node name. Weights are never read: initializers become arguments marked
/// `vram.param`. On failure, reports an error on `context` and returns null.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(llvm::StringRef path, mlir::MLIRContext *context,
               const ONNXImportOptions &options = {});

/// Same, for a model already in memory; `isText` selects the text format.
mlir::OwningOpRef<mlir::ModuleOp>
importONNX(llvm::StringRef bytes, bool isText, llvm::StringRef sourceName,
           mlir::MLIRContext *context, const ONNXImportOptions &options = {});

/// True for file names the importer reads (`.onnx`, `.onnxtext`).
bool isONNXFileName(llvm::StringRef path);

/// True when `bytes` look like ONNX's text format (a model starts with its
/// `<...>` header, or a comment) rather than a binary protobuf.
bool looksLikeONNXText(llvm::StringRef bytes);

/// Binds what a driver's flags ask for: the batch (`--<flagPrefix>batch`,
/// when given) and dynamic dimensions (`--<flagPrefix>dim name=value`, a
/// `dim_param` name and a positive size); an error naming the flag when a
/// value is malformed.
llvm::Error bindDimensionFlags(ONNXImportOptions &options,
                               std::optional<int64_t> batch,
                               llvm::ArrayRef<std::string> dims);

/// Registers the `import-onnx` translation (ONNX model, binary or text, to
/// the onnx dialect) with its options `--onnx-batch` and `--onnx-dim`, for
/// mlir-translate-like drivers (vram-translate).
void registerImportONNXTranslation();

} // namespace vram

#endif // VRAM_IMPORT_ONNXIMPORTER_H
