//===- vram-opt.cpp - the vram-opt driver ---------------------------------===//
//
// mlir-opt with every upstream dialect and pass plus vram-opt's own, which
// also reads ONNX models (`.onnx`, `.onnxtext`) directly: they are imported,
// then processed like any MLIR input.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/CostModel.h"
#include "vram/Conversion/Passes.h"
#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MaxBatch.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Import/ONNXImporter.h"
#include "vram/Pipelines/GPUPipeline.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringExtras.h"
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

llvm::cl::OptionCategory memoryCategory("Memory analysis options");

llvm::cl::opt<std::string> report(
    "report", llvm::cl::ValueOptional, llvm::cl::value_desc("format"),
    llvm::cl::desc("Print a memory report instead of the IR: table "
                   "(default), json or html"),
    llvm::cl::cat(memoryCategory));

llvm::cl::opt<std::string>
    reportFile("report-file", llvm::cl::value_desc("path"),
               llvm::cl::desc("Where --report writes (default: stdout)"),
               llvm::cl::init("-"), llvm::cl::cat(memoryCategory));

llvm::cl::opt<std::string>
    budget("budget", llvm::cl::value_desc("bytes"),
           llvm::cl::desc("Memory budget for the program's tensors: 16GB "
                          "(SI), 16GiB (binary), 512MiB, 1.5TB, 16e9"),
           llvm::cl::cat(memoryCategory));

llvm::cl::opt<std::string> device(
    "device", llvm::cl::value_desc("name"),
    llvm::cl::desc("GPU profile (H200, H100, A100-40GB, A100-80GB, V100-16GB, "
                   "V100-32GB, RTX4090, L4, T4); without --budget the budget "
                   "is its memory minus the CUDA context reserve"),
    llvm::cl::cat(memoryCategory));

llvm::cl::OptionCategory stepCategory("Training and planning options");

llvm::cl::opt<std::string> train(
    "train", llvm::cl::ValueOptional, llvm::cl::value_desc("options"),
    llvm::cl::desc("Build the training step (forward, loss, backward, "
                   "optimizer update) from the model, e.g. "
                   "--train=\"optimizer=momentum precision=amp-bf16\" (the "
                   "options of the vram-train pass)"),
    llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> plan(
    "plan",
    llvm::cl::desc("Plan recomputation, offload and order to fit --budget "
                   "(or --device); implied by --train with a budget or "
                   "device; the plan is verified after it is applied"),
    llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> maxBatch(
    "max-batch",
    llvm::cl::desc("Find the largest batch that fits --budget, by analysis "
                   "(no runs), and report what fills the memory at it"),
    llvm::cl::cat(memoryCategory));
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
  // The node name says where; the generic form of the op would be noise.
  context.printOpOnDiagnostic(false);
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

/// The peak of @main of `path` imported at `batch`; errors are reported.
static FailureOr<uint64_t> analysePeakAtBatch(llvm::StringRef path,
                                              DialectRegistry &registry,
                                              vram::ONNXImportOptions options,
                                              int64_t batch) {
  options.batchSize = batch;
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module = vram::importONNXFile(path, &context, options);
  if (!module)
    return failure();
  auto main = module->lookupSymbol<func::FuncOp>("main");
  vram::MemoryAnalysis analysis(main);
  if (!analysis.isValid()) {
    llvm::errs() << path << ": error: at batch " << batch
                 << ", some tensor sizes are unknown\n";
    return failure();
  }
  return analysis.getPeakBytes();
}

/// --max-batch: searches the batch, then prints what fills the memory there.
/// Returns the batch to import for the report, or failure.
static FailureOr<int64_t> runMaxBatchSearch(llvm::StringRef path,
                                            DialectRegistry &registry,
                                            const vram::ONNXImportOptions &options,
                                            uint64_t budgetBytes) {
  FailureOr<vram::MaxBatchResult> result = vram::findMaxBatch(
      [&](int64_t batch) {
        return analysePeakAtBatch(path, registry, options, batch);
      },
      budgetBytes);
  if (failed(result))
    return failure();
  llvm::raw_ostream &os = llvm::outs();
  if (result->batch == 0) {
    llvm::errs() << path << ": error: not even batch 1 fits the budget of "
                 << vram::formatBinaryBytes(budgetBytes) << ": it needs "
                 << vram::formatBinaryBytes(result->peakBytes) << " ("
                 << vram::formatExactBytes(result->peakBytes)
                 << " bytes) at its peak\n";
    return failure();
  }
  os << "Largest batch that fits " << vram::formatBinaryBytes(budgetBytes)
     << " (" << vram::formatExactBytes(budgetBytes) << " bytes): "
     << result->batch << ", peak " << vram::formatBinaryBytes(result->peakBytes)
     << " (" << vram::formatExactBytes(result->peakBytes) << " bytes)\n";
  if (result->firstFailingBatch)
    os << "  batch " << result->firstFailingBatch << " needs "
       << vram::formatBinaryBytes(result->firstFailingPeakBytes) << " ("
       << vram::formatExactBytes(result->firstFailingPeakBytes) << " bytes)\n";
  os << "  found by analysing " << result->evaluations
     << " batch sizes (doubling, then bisection); nothing was run\n\n";
  return result->batch;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  vram::registerVramPasses();
  vram::registerVramConversionPasses();
  vram::registerVramPipelines();
  vram::registerLowerToGPUPipeline();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary (vram-lower-to-gpu) translates kernels to LLVM IR.
  registerAllGPUToLLVMIRTranslations(registry);
  registry.insert<vram::ONNXDialect>();
  registry.insert<vram::VramDialect>();
  vram::registerCostModelExternalModels(registry);

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "vram-opt: memory planning for "
                                             "ML models\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();

  std::optional<uint64_t> budgetBytes;
  if (!budget.empty()) {
    llvm::Expected<uint64_t> parsed = vram::parseByteSize(budget);
    if (!parsed) {
      llvm::errs() << "error: --budget: " << llvm::toString(parsed.takeError())
                   << "\n";
      return 1;
    }
    budgetBytes = *parsed;
  } else if (!device.empty()) {
    llvm::Expected<const vram::DeviceProfile &> profile =
        vram::requireDeviceProfile(device);
    if (!profile) {
      llvm::errs() << "error: --device: " << llvm::toString(profile.takeError())
                   << "\n";
      return 1;
    }
    budgetBytes = vram::usableBytes(*profile);
  }
  bool wantsReport = report.getNumOccurrences() > 0 || maxBatch;
  if (maxBatch && !budgetBytes) {
    llvm::errs() << "error: --max-batch needs a --budget or a --device\n";
    return 1;
  }
  if (maxBatch && !vram::isONNXFileName(inputFilename)) {
    llvm::errs() << "error: --max-batch needs an ONNX model whose batch "
                    "dimension it can bind\n";
    return 1;
  }

  std::unique_ptr<llvm::MemoryBuffer> input;
  if (vram::isONNXFileName(inputFilename)) {
    FailureOr<vram::ONNXImportOptions> options = getImportOptions();
    if (failed(options))
      return 1;
    if (maxBatch) {
      FailureOr<int64_t> batch =
          runMaxBatchSearch(inputFilename, registry, *options, *budgetBytes);
      if (failed(batch))
        return 1;
      options->batchSize = *batch;
    }
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

  // Steps the flags add after the command line's own pipeline: build the
  // training step, plan it under the budget (and verify the plan), report.
  SmallVector<std::string> steps;
  if (train.getNumOccurrences())
    steps.push_back("vram-train{" + train.getValue() + "}");
  bool wantsPlan = plan || (train.getNumOccurrences() &&
                            (!budget.empty() || !device.empty()));
  if (wantsPlan) {
    std::string planOptions = "print-plan=" +
                              std::string(wantsReport ? "false" : "true");
    if (!budget.empty())
      planOptions += " budget=" + budget;
    if (!device.empty())
      planOptions += " device=" + device;
    steps.push_back("vram-plan{" + planOptions + "}");
    steps.push_back("vram-verify-plan");
  }
  if (!steps.empty() && !wantsReport) {
    MlirOptMainConfig cliConfig = config;
    config.setPassPipelineSetupFn(
        [cliConfig, steps](PassManager &pm) -> LogicalResult {
          if (failed(cliConfig.setupPassPipeline(pm)))
            return failure();
          return parsePassPipeline(llvm::join(steps, ","), pm, llvm::errs());
        });
  }

  // A report replaces the IR on the output: the analysis runs after
  // whatever pipeline the command line gives.
  if (wantsReport) {
    vram::PrintMemoryPassOptions reportOptions;
    reportOptions.format = report.empty() ? "table" : report.getValue();
    reportOptions.output = reportFile;
    reportOptions.budget = budget;
    reportOptions.device = device;
    MlirOptMainConfig cliConfig = config;
    config.setPassPipelineSetupFn(
        [cliConfig, steps, reportOptions](PassManager &pm) -> LogicalResult {
          if (failed(cliConfig.setupPassPipeline(pm)))
            return failure();
          if (!steps.empty() &&
              failed(parsePassPipeline(llvm::join(steps, ","), pm,
                                       llvm::errs())))
            return failure();
          pm.addPass(vram::createPrintMemoryPass(reportOptions));
          return success();
        });
    if (outputFilename == "-")
      outputFilename = "/dev/null";
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
