//===- vram-opt.cpp - the vram-opt driver ---------------------------------===//
//
// mlir-opt with every upstream dialect and pass plus vram-opt's own, which
// also reads ONNX models (`.onnx`, `.onnxtext`) directly: they are imported,
// then processed like any MLIR input.
//
//===----------------------------------------------------------------------===//

#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Import/ONNXImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
llvm::cl::OptionCategory importCategory("ONNX import options");

llvm::cl::list<std::string>
    dimBindings("dim", llvm::cl::value_desc("name=value"),
                llvm::cl::desc("Bind an ONNX dynamic dimension by its "
                               "dim_param name (repeatable)"),
                llvm::cl::cat(importCategory));

llvm::cl::opt<int64_t>
    batchSize("batch", llvm::cl::value_desc("N"),
              llvm::cl::desc("Bind the leading dimension of the first input"),
              llvm::cl::init(0), llvm::cl::cat(importCategory));
} // namespace

/// Parses `--dim name=value` flags into the importer's options.
static FailureOr<vram::ONNXImportOptions> getImportOptions() {
  vram::ONNXImportOptions options;
  for (const std::string &binding : dimBindings) {
    auto [name, value] = llvm::StringRef(binding).split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size <= 0) {
      llvm::errs() << "error: --dim expects name=value with a positive "
                      "integer value, got '"
                   << binding << "'\n";
      return failure();
    }
    options.dimBindings[name] = size;
  }
  if (batchSize.getNumOccurrences()) {
    if (batchSize <= 0) {
      llvm::errs() << "error: --batch expects a positive integer\n";
      return failure();
    }
    options.batchSize = batchSize;
  }
  return options;
}

static llvm::StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  llvm_unreachable("unknown diagnostic severity");
}

/// Renders an import location as `file: node 'name'`: the node name is what
/// a user can find in their model, the file position (always 0:0) is not.
static void printImportLocation(Location loc, llvm::raw_ostream &os) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    printImportLocation(name.getChildLoc(), os);
    os << ": node '" << name.getName().getValue() << "'";
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    os << file.getFilename().getValue();
  } else {
    loc.print(os);
  }
}

/// Imports an ONNX model and returns it as MLIR text for MlirOptMain.
static std::unique_ptr<llvm::MemoryBuffer>
importAsMLIRText(llvm::StringRef path, DialectRegistry &registry,
                 const vram::ONNXImportOptions &options) {
  MLIRContext context(registry);
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &diag) {
    auto print = [](Diagnostic &d) {
      printImportLocation(d.getLocation(), llvm::errs());
      llvm::errs() << ": " << severityName(d.getSeverity()) << ": " << d
                   << "\n";
    };
    print(diag);
    for (Diagnostic &note : diag.getNotes())
      print(note);
    return success();
  });
  OwningOpRef<ModuleOp> module = vram::importONNXFile(path, &context, options);
  if (!module)
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  // Locations carry the ONNX node names; keep them through the round trip.
  module->print(os, OpPrintingFlags().enableDebugInfo());
  return llvm::MemoryBuffer::getMemBufferCopy(text, path);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<vram::ONNXDialect>();

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "vram-opt: memory planning for "
                                             "ML models\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  std::unique_ptr<llvm::MemoryBuffer> input;
  if (vram::isONNXFileName(inputFilename)) {
    FailureOr<vram::ONNXImportOptions> options = getImportOptions();
    if (failed(options))
      return 1;
    input = importAsMLIRText(inputFilename, registry, *options);
    if (!input)
      return 1;
  } else {
    std::string errorMessage;
    input = openInputFile(inputFilename, &errorMessage);
    if (!input) {
      llvm::errs() << "error: " << errorMessage << "\n";
      return 1;
    }
  }

  std::string errorMessage;
  auto output = openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "error: " << errorMessage << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
