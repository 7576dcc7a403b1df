//===- vram-opt.cpp - the vram-opt driver ---------------------------------===//
//
// mlir-opt with every upstream dialect and pass plus vram-opt's own, which
// also reads ONNX models (`.onnx`, `.onnxtext`) directly: they are imported,
// then processed like any MLIR input.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MaxBatch.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Conversion/Passes.h"
#include "vram/Import/NodeDiagnostics.h"
#include "vram/Import/ONNXImporter.h"
#include "vram/InitAll.h"
#include "vram/Pipelines/GPUPipeline.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Planning/IRPlanning.h"
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
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"

#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;

namespace {
llvm::cl::OptionCategory importCategory("ONNX import options");

llvm::cl::list<std::string>
    dimBindings("dim", llvm::cl::value_desc("name=value"),
                llvm::cl::desc("Bind an ONNX dynamic dimension by its "
                               "dim_param name (repeatable)"),
                llvm::cl::cat(importCategory));

llvm::cl::list<std::string> inputValueFiles(
    "input-value", llvm::cl::value_desc("name=file.pb"),
    llvm::cl::desc("The value of a graph input an op needs to know its "
                   "result's shape (Resize's sizes, a Reduce's axes), as a "
                   "TensorProto file: the input becomes that constant "
                   "(repeatable)"),
    llvm::cl::cat(importCategory));

llvm::cl::opt<std::string> inputValuesDirectory(
    "inputs", llvm::cl::value_desc("dir"),
    llvm::cl::desc("Like --input-value for every input, from a directory in "
                   "ONNX's backend-test layout (input_0.pb, ... for the "
                   "model's inputs in order), as vram-run --inputs takes"),
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

llvm::cl::opt<std::string> parallel(
    "parallel", llvm::cl::value_desc("options"),
    llvm::cl::desc("With --train, analyse (plan, lower) the program of one "
                   "rank of a parallel run, e.g. --parallel=\"dp=8 zero=1 "
                   "tp=4 pp=4 stage=0\" (dp ranks and ZeRO stage 0-3: "
                   "vram-parallelize's options; tp ranks: "
                   "vram-tensor-parallel's; pp stages, stage and "
                   "microbatches: vram-pipeline-stage's)"),
    llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> plan(
    "plan",
    llvm::cl::desc("Plan recomputation, offload and order to fit --budget "
                   "(or --device); implied by --budget (but for --max-batch, "
                   "which plans with --plan or --train) and by --train with "
                   "a device; the plan is verified after it is applied"),
    llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> reorder(
    "reorder",
    llvm::cl::desc("With a plan, also plan the op orders chosen for memory "
                   "(an optimizer update right after its gradient, ...) and "
                   "keep the fastest plan (default); false keeps the model's "
                   "op order"),
    llvm::cl::init(true), llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> arenaCheck(
    "arena-check",
    llvm::cl::desc("With a plan, also place its buffers as the GPU program's "
                   "arena does and plan for less until they fit the budget "
                   "(default); false holds the budget in live bytes only, "
                   "for a program another allocator places"),
    llvm::cl::init(true), llvm::cl::cat(stepCategory));

/// What the driver prints (or writes) after import and the flags' steps.
enum class EmitKind { MLIR, Linalg, LLVM, PTX, Cubin };

llvm::cl::opt<EmitKind> emit(
    "emit", llvm::cl::value_desc("form"),
    llvm::cl::desc("Lower after import, --train and --plan, and print: "
                   "mlir (no lowering, default), linalg (linalg on tensors), "
                   "llvm (vram-lower-to-cpu's LLVM dialect), ptx or cubin "
                   "(vram-lower-to-gpu's kernel object, written to -o; cubin "
                   "needs ptxas)"),
    llvm::cl::values(
        clEnumValN(EmitKind::MLIR, "mlir", "the IR as imported"),
        clEnumValN(EmitKind::Linalg, "linalg", "linalg on tensors"),
        clEnumValN(EmitKind::LLVM, "llvm", "LLVM dialect for CPU execution"),
        clEnumValN(EmitKind::PTX, "ptx", "PTX text of every kernel"),
        clEnumValN(EmitKind::Cubin, "cubin", "cubin (ELF) of every kernel")),
    llvm::cl::init(EmitKind::MLIR), llvm::cl::cat(stepCategory));

llvm::cl::opt<bool> maxBatch(
    "max-batch",
    llvm::cl::desc("Find the largest batch that fits --budget, by analysis "
                   "(no runs), and report what fills the memory at it; with "
                   "planning (--train, --plan), the largest batch that has a "
                   "plan within the budget and --max-overhead"),
    llvm::cl::cat(memoryCategory));

llvm::cl::opt<std::string> maxOverhead(
    "max-overhead", llvm::cl::value_desc("fraction"),
    llvm::cl::desc("With planning: the most time a plan may add to the "
                   "compute time, as 20% or 0.2"),
    llvm::cl::cat(stepCategory));
} // namespace

/// Whether the flags ask for a plan: --plan, a budget (what
/// `vram-opt model.onnx --budget=16GB` is for), or --train with a device.
/// --max-batch alone searches by analysis, without plans.
static bool wantsPlanning() {
  bool training = train.getNumOccurrences();
  return plan || (!budget.empty() && (!maxBatch || training)) ||
         (training && !device.empty());
}

/// --max-overhead as a fraction ("20%" or "0.2"); negative when not given.
static FailureOr<double> getMaxOverhead() {
  if (maxOverhead.empty())
    return -1.0;
  llvm::StringRef text = llvm::StringRef(maxOverhead).trim();
  bool percent = text.consume_back("%");
  double value;
  if (text.getAsDouble(value) || !std::isfinite(value) || value < 0) {
    llvm::errs() << "error: --max-overhead expects a non-negative fraction "
                    "or percentage (0.2, 20%), got '"
                 << maxOverhead << "'\n";
    return failure();
  }
  return percent ? value / 100 : value;
}

/// The importer's options from the import flags.
static FailureOr<vram::ONNXImportOptions> getImportOptions() {
  vram::ONNXImportOptions options;
  if (llvm::Error error = vram::bindDimensionFlags(
          options,
          batchSize.getNumOccurrences() ? std::optional<int64_t>(batchSize)
                                        : std::nullopt,
          dimBindings)) {
    llvm::errs() << "error: " << llvm::toString(std::move(error)) << "\n";
    return failure();
  }
  options.inputValuesDirectory = inputValuesDirectory;
  for (const std::string &binding : inputValueFiles) {
    auto [name, path] = llvm::StringRef(binding).split('=');
    if (name.empty() || path.empty()) {
      llvm::errs() << "error: --input-value expects name=file.pb, got '"
                   << binding << "'\n";
      return failure();
    }
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      llvm::errs() << "error: --input-value: cannot read '" << path
                   << "': " << buffer.getError().message() << "\n";
      return failure();
    }
    options.inputValues[name] = (*buffer)->getBuffer().str();
  }
  return options;
}

/// `module` as MLIR text for MlirOptMain, named `path`.
static std::unique_ptr<llvm::MemoryBuffer> printAsInput(ModuleOp module,
                                                        llvm::StringRef path) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Locations carry the ONNX node names; keep them through the round trip.
  module.print(os, OpPrintingFlags().enableDebugInfo());
  return llvm::MemoryBuffer::getMemBufferCopy(text, path);
}

/// Imports an ONNX model and returns it as MLIR text for MlirOptMain.
static std::unique_ptr<llvm::MemoryBuffer>
importAsMLIRText(llvm::StringRef path, DialectRegistry &registry,
                 const vram::ONNXImportOptions &options) {
  MLIRContext context(registry);
  vram::NodeDiagnosticPrinter printer(context);
  OwningOpRef<ModuleOp> module = vram::importONNXFile(path, &context, options);
  if (!module)
    return nullptr;
  return printAsInput(*module, path);
}

/// Adds vram-train with --train's options and, with --parallel, the
/// passes of one rank's program.
static LogicalResult addTrainPass(OpPassManager &pm) {
  return vram::addTrainingStepPasses(
      pm, train,
      parallel.getNumOccurrences() ? std::optional<llvm::StringRef>(parallel)
                                   : std::nullopt,
      [](const llvm::Twine &message) {
        llvm::errs() << "error: " << message << "\n";
      });
}

/// What --max-batch evaluates at one batch: `path` imported at `batch`
/// into `context`, as the training step when --train asks for it. Errors
/// are reported.
static OwningOpRef<ModuleOp> importStepAtBatch(llvm::StringRef path,
                                               MLIRContext &context,
                                               vram::ONNXImportOptions options,
                                               int64_t batch) {
  options.batchSize = batch;
  OwningOpRef<ModuleOp> module = vram::importONNXFile(path, &context, options);
  if (!module || !train.getNumOccurrences())
    return module;
  PassManager pm(&context);
  if (failed(addTrainPass(pm)) || failed(pm.run(*module)))
    return nullptr;
  return module;
}

/// Whether the analysis knows every size; reports it when not.
static bool isAnalysable(const vram::MemoryAnalysis &analysis,
                         llvm::StringRef path, int64_t batch) {
  if (!analysis.isValid())
    llvm::errs() << path << ": error: at batch " << batch
                 << ", some tensor sizes are unknown\n";
  return analysis.isValid();
}

/// The peak of @main of the step at `batch`; errors are reported.
static FailureOr<uint64_t> analysePeakAtBatch(llvm::StringRef path,
                                              DialectRegistry &registry,
                                              vram::ONNXImportOptions options,
                                              int64_t batch) {
  MLIRContext context(registry);
  vram::NodeDiagnosticPrinter printer(context);
  OwningOpRef<ModuleOp> module =
      importStepAtBatch(path, context, options, batch);
  if (!module)
    return failure();
  vram::MemoryAnalysis analysis(module->lookupSymbol<func::FuncOp>("main"));
  if (!isAnalysable(analysis, path, batch))
    return failure();
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

/// What planning the step at one batch gave: a plan (its simulated peak and
/// overhead) or the reason there is none within the budget and overhead cap.
struct PlannedBatch {
  std::optional<vram::planner::SimulationResult> plan;
  std::string reason;
};

/// Plans the step at `batch` (importStepAtBatch) as vram-plan would
/// (nothing runs). Errors other than "no plan fits" are reported and fail.
static FailureOr<PlannedBatch>
planAtBatch(llvm::StringRef path, DialectRegistry &registry,
            vram::ONNXImportOptions options, int64_t batch,
            const vram::DeviceProfile &profile,
            const vram::FunctionPlanOptions &planOptions) {
  MLIRContext context(registry);
  vram::NodeDiagnosticPrinter printer(context);
  OwningOpRef<ModuleOp> module =
      importStepAtBatch(path, context, options, batch);
  if (!module)
    return failure();
  auto main = module->lookupSymbol<func::FuncOp>("main");
  vram::MemoryAnalysis analysis(main);
  if (!isAnalysable(analysis, path, batch))
    return failure();
  PlannedBatch result;
  llvm::Expected<vram::FunctionPlan> planned = vram::planFunctionBody(
      analysis, main.getBody().front(), profile, planOptions);
  if (planned)
    result.plan = planned->plan.simulation;
  else
    result.reason = llvm::toString(planned.takeError());
  return result;
}

/// vram-fit-plan-to-arena's options from the command line: vram-plan and
/// vram-verify-plan, re-planned until the lowered program's arena fits too.
static vram::FitPlanToArenaPassOptions
getFitOptions(std::optional<uint64_t> budgetBytes, double overheadCap) {
  vram::FitPlanToArenaPassOptions fit;
  if (budgetBytes)
    fit.budget = std::to_string(*budgetBytes);
  if (!device.empty())
    fit.device = device;
  fit.maxOverhead = overheadCap;
  fit.checkArena = arenaCheck;
  fit.allowReorder = reorder;
  return fit;
}

/// The step at one batch as the driver's own pipeline plans it: the plan's
/// summary and the planned module, as MlirOptMain's input.
struct FittedStep {
  vram::PlanSummary summary;
  std::unique_ptr<llvm::MemoryBuffer> module;
};

/// The plan the driver's own pipeline makes for the step at `batch`
/// (vram-fit-plan-to-arena with `fit`), or none when no plan meets the
/// budget there. Quiet: the search reports.
static std::optional<FittedStep>
fitAtBatch(llvm::StringRef path, DialectRegistry &registry,
           const vram::ONNXImportOptions &options, int64_t batch,
           const vram::FitPlanToArenaPassOptions &fit) {
  MLIRContext context(registry);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module =
      importStepAtBatch(path, context, options, batch);
  if (!module)
    return std::nullopt;
  PassManager pm(&context);
  pm.addPass(vram::createFitPlanToArenaPass(fit));
  if (failed(pm.run(*module)))
    return std::nullopt;
  std::optional<vram::PlanSummary> summary =
      vram::readPlanSummary(module->lookupSymbol<func::FuncOp>("main"));
  if (!summary)
    return std::nullopt;
  return FittedStep{*summary, printAsInput(*module, path)};
}

/// --max-batch with planning: the largest batch whose step (training step
/// with --train, else the model) has a plan within the budget and the
/// overhead cap. Prints it and why the next batch has none; returns its
/// planned step (the driver reports it without planning it again).
static FailureOr<FittedStep>
runPlannedMaxBatchSearch(llvm::StringRef path, DialectRegistry &registry,
                         const vram::ONNXImportOptions &options,
                         uint64_t budgetBytes, double overheadCap) {
  llvm::Expected<const vram::DeviceProfile &> profile =
      vram::requireDeviceProfile(device.empty() ? "H100" : device.getValue());
  if (!profile) {
    llvm::errs() << "error: --device: " << llvm::toString(profile.takeError())
                 << "\n";
    return failure();
  }
  vram::FunctionPlanOptions planOptions;
  planOptions.budget = budgetBytes;
  planOptions.maxOverhead = overheadCap;
  llvm::DenseMap<int64_t, PlannedBatch> planned;
  FailureOr<vram::LargestBatch> found = vram::findLargestBatch(
      [&](int64_t batch) -> FailureOr<bool> {
        FailureOr<PlannedBatch> result = planAtBatch(
            path, registry, options, batch, *profile, planOptions);
        if (failed(result))
          return failure();
        bool fits = result->plan.has_value();
        planned[batch] = std::move(*result);
        return fits;
      });
  if (failed(found))
    return failure();
  if (found->batch == 0) {
    llvm::errs() << path << ": error: not even batch 1 has a plan: "
                 << planned[1].reason << "\n";
    return failure();
  }
  // The search plans live bytes; the driver then fits the plan to its
  // lowered arena, whose holes can push the largest batch over the budget.
  // Step down from it, by growing steps, until the driver's own plan fits,
  // then bisect back up.
  vram::FitPlanToArenaPassOptions fit = getFitOptions(budgetBytes, overheadCap);
  int64_t batch = found->batch, tooLarge = 0,
          step = std::max<int64_t>(1, batch / 64);
  unsigned fitted = 1;
  std::optional<FittedStep> best =
      fitAtBatch(path, registry, options, batch, fit);
  while (!best && batch > 1) {
    tooLarge = batch;
    batch = std::max<int64_t>(1, batch - step);
    step *= 2;
    ++fitted;
    best = fitAtBatch(path, registry, options, batch, fit);
  }
  if (!best) {
    llvm::errs() << path
                 << ": error: not even batch 1 has a plan whose lowered "
                    "program fits the budget\n";
    return failure();
  }
  while (tooLarge && tooLarge - batch > 1) {
    int64_t middle = batch + (tooLarge - batch) / 2;
    ++fitted;
    if (std::optional<FittedStep> step =
            fitAtBatch(path, registry, options, middle, fit)) {
      batch = middle;
      best = std::move(step);
    } else {
      tooLarge = middle;
    }
  }
  llvm::raw_ostream &os = llvm::outs();
  os << "Largest batch whose "
     << (train.getNumOccurrences() ? "training step" : "model")
     << " has a plan within " << vram::formatBinaryBytes(budgetBytes) << " ("
     << vram::formatExactBytes(budgetBytes) << " bytes) on " << profile->name;
  if (overheadCap >= 0)
    os << llvm::format(" with overhead <= %.1f%%", overheadCap * 100);
  os << ": " << batch << "\n  planned peak "
     << vram::formatBinaryBytes(best->summary.plannedPeak) << " ("
     << vram::formatExactBytes(best->summary.plannedPeak)
     << " bytes), overhead "
     << llvm::format("%.1f%%", best->summary.overhead() * 100) << "\n";
  if (tooLarge)
    os << "  batch " << tooLarge
       << ": its plan meets the budget in live bytes, but not once lowered "
          "(the arena's holes)\n";
  else if (found->firstFailingBatch)
    os << "  batch " << found->firstFailingBatch << ": "
       << planned[found->firstFailingBatch].reason << "\n";
  os << "  found by planning " << found->evaluations
     << " batch sizes (doubling, then bisection) and fitting " << fitted
     << " to the lowered arena; nothing was run\n\n";
  return std::move(*best);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAllPasses();
  vram::registerAllPasses();
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary (vram-lower-to-gpu) translates kernels to LLVM IR.
  registerAllGPUToLLVMIRTranslations(registry);
  vram::registerAllDialects(registry);

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "vram-opt: memory planning for "
                                             "ML models\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // An error names its node or op; a generic-form dump of the whole module
  // after it is noise for a model's user (ask for it with
  // --mlir-print-op-on-diagnostic).
  if (llvm::cl::Option *printOp = llvm::cl::getRegisteredOptions().lookup(
          "mlir-print-op-on-diagnostic");
      printOp && printOp->getNumOccurrences() == 0)
    printOp->addOccurrence(0, "mlir-print-op-on-diagnostic", "false");

  std::optional<uint64_t> budgetBytes;
  if (device.getNumOccurrences() && device.empty()) {
    llvm::errs() << "error: --device expects a device name (e.g. H100, "
                    "A100-80GB)\n";
    return 1;
  }
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
  if (parallel.getNumOccurrences() && !train.getNumOccurrences()) {
    llvm::errs() << "error: --parallel needs --train: it shards the training "
                    "step\n";
    return 1;
  }
  bool wantsReport = report.getNumOccurrences() > 0 || maxBatch;
  if (emit != EmitKind::MLIR && wantsReport) {
    llvm::errs() << "error: --emit and --report (or --max-batch) both choose "
                    "what is printed; give one\n";
    return 1;
  }
  // PTX and cubin are the kernel object, written where -o says; the lowered
  // host code (MLIR) is not printed.
  std::string binaryFile;
  if (emit == EmitKind::PTX || emit == EmitKind::Cubin) {
    if (emit == EmitKind::Cubin && !vram::findPtxas()) {
      llvm::errs() << "error: --emit=cubin needs ptxas, found neither on "
                      "PATH nor in the CUDA toolkit's bin/ (CUDA_ROOT, "
                      "CUDA_HOME, CUDA_PATH); --emit=ptx needs no toolkit\n";
      return 1;
    }
    if (emit == EmitKind::Cubin && outputFilename == "-") {
      llvm::errs() << "error: --emit=cubin writes a binary file: give -o\n";
      return 1;
    }
    binaryFile = outputFilename;
    outputFilename = "/dev/null";
  }
  FailureOr<double> overheadCap = getMaxOverhead();
  if (failed(overheadCap))
    return 1;
  if (*overheadCap >= 0 && !wantsPlanning()) {
    llvm::errs() << "error: --max-overhead needs planning: --plan, "
                    "--budget, or --train with --device (with --max-batch: "
                    "--plan or --train)\n";
    return 1;
  }
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
  // The planned --max-batch search hands over the step it planned at the
  // batch it found: built and planned already.
  bool stepPlanned = false;
  if (vram::isONNXFileName(inputFilename)) {
    FailureOr<vram::ONNXImportOptions> options = getImportOptions();
    if (failed(options))
      return 1;
    if (maxBatch && wantsPlanning()) {
      FailureOr<FittedStep> fitted = runPlannedMaxBatchSearch(
          inputFilename, registry, *options, *budgetBytes, *overheadCap);
      if (failed(fitted))
        return 1;
      input = std::move(fitted->module);
      stepPlanned = true;
    } else {
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
    }
  } else {
    std::string errorMessage;
    input = openInputFile(inputFilename, &errorMessage);
    if (!input) {
      llvm::errs() << "error: " << errorMessage << "\n";
      return 1;
    }
  }

  // Steps the flags add before the command line's own pipeline: build the
  // training step, plan it under the budget (and verify the plan); after
  // it, report or lower.
  bool buildsStep = train.getNumOccurrences() && !stepPlanned;
  // vram-plan and vram-verify-plan, re-planned until the lowered program's
  // arena fits too.
  std::optional<vram::FitPlanToArenaPassOptions> fitOptions;
  if (wantsPlanning() && !stepPlanned) {
    fitOptions = getFitOptions(budget.empty() ? std::nullopt
                                              : std::optional(*budgetBytes),
                               *overheadCap);
    // The plan's summary goes with the IR, not into a lowered artifact.
    fitOptions->printPlan = !wantsReport && emit == EmitKind::MLIR;
  }
  // One pipeline: the flags' steps build the program (the training step,
  // planned), the command line's passes transform it, then --emit lowers it
  // or --report analyses it (a report replaces the IR on the output).
  std::optional<vram::PrintMemoryPassOptions> reportOptions;
  if (wantsReport) {
    reportOptions.emplace();
    reportOptions->format = report.empty() ? "table" : report.getValue();
    reportOptions->output = reportFile;
    reportOptions->budget = budget;
    reportOptions->device = device;
    if (outputFilename == "-")
      outputFilename = "/dev/null";
  }
  MlirOptMainConfig cliConfig = config;
  // An imported model's locations are node names in a file without lines:
  // the passes' errors print as the import's do, not as `file:0:0:`.
  bool importedModel = vram::isONNXFileName(inputFilename);
  config.setPassPipelineSetupFn(
      [cliConfig, buildsStep, fitOptions, binaryFile, reportOptions,
       importedModel](PassManager &pm) -> LogicalResult {
        if (importedModel)
          pm.getContext()->getDiagEngine().registerHandler(
              vram::NodeDiagnosticPrinter::handle);
        if (buildsStep && failed(addTrainPass(pm)))
          return failure();
        if (fitOptions)
          pm.addPass(vram::createFitPlanToArenaPass(*fitOptions));
        if (failed(cliConfig.setupPassPipeline(pm)))
          return failure();
        if (reportOptions) {
          pm.addPass(vram::createPrintMemoryPass(*reportOptions));
          return success();
        }
        switch (emit) {
        case EmitKind::MLIR:
          break;
        case EmitKind::Linalg:
          vram::buildONNXToLinalgPipeline(pm);
          break;
        case EmitKind::LLVM:
          vram::buildLowerToCPUPipeline(pm);
          break;
        case EmitKind::PTX:
        case EmitKind::Cubin: {
          vram::LowerToGPUOptions gpu;
          gpu.format = emit == EmitKind::PTX ? "isa" : "bin";
          gpu.binaryFile = binaryFile;
          vram::buildLowerToGPUPipeline(pm, gpu);
          break;
        }
        }
        return success();
      });

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
