//===- ImportTranslation.cpp - the import-onnx translation ----------------===//
//
// The importer as an MLIR translation, so that an mlir-translate-like driver
// (vram-translate, or another project's) turns a model into the onnx dialect
// the way it turns any other format into MLIR.
//
//===----------------------------------------------------------------------===//

#include "vram/Import/ONNXImporter.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

void vram::registerImportONNXTranslation() {
  // Function-local, as upstream's translations keep theirs: the options
  // exist in the drivers that register the translation.
  static llvm::cl::OptionCategory category("import-onnx options");
  static llvm::cl::opt<int64_t> batch(
      "onnx-batch", llvm::cl::value_desc("N"),
      llvm::cl::desc("Bind the leading dimension of the first input"),
      llvm::cl::init(0), llvm::cl::cat(category));
  static llvm::cl::list<std::string> dims(
      "onnx-dim", llvm::cl::value_desc("name=value"),
      llvm::cl::desc("Bind an ONNX dynamic dimension by its dim_param name "
                     "(repeatable)"),
      llvm::cl::cat(category));

  TranslateToMLIRRegistration registration(
      "import-onnx",
      "Import an ONNX model (binary or text) into the onnx "
      "dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        ONNXImportOptions options;
        options.flagPrefix = "onnx-";
        if (llvm::Error error = bindDimensionFlags(
                options,
                batch.getNumOccurrences() ? std::optional<int64_t>(batch)
                                          : std::nullopt,
                dims)) {
          emitError(UnknownLoc::get(context))
              << llvm::toString(std::move(error));
          return nullptr;
        }
        const llvm::MemoryBuffer *input =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        llvm::StringRef bytes = input->getBuffer();
        OwningOpRef<ModuleOp> module =
            importONNX(bytes, looksLikeONNXText(bytes),
                       input->getBufferIdentifier(), context, options);
        return OwningOpRef<Operation *>(module.release());
      });
}
