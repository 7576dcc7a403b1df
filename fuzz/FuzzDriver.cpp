//===- FuzzDriver.cpp - libFuzzer target: what vram-opt does with a model -===//
//
// Every model the importer accepts goes through what `vram-opt M --report`
// and `vram-opt M --train=optimizer=adam --budget=B` do: the memory analysis
// and its three reports, the training step, and a plan at 60% of the step's
// peak, verified. Each stage may refuse; none may crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

/// The three reports of @main, into a string; the peak, or 0 when the
/// analysis cannot size every tensor.
static uint64_t reportMemory(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return 0;
  vram::MemoryAnalysis analysis(main);
  if (!analysis.isValid())
    return 0;
  std::string text;
  llvm::raw_string_ostream os(text);
  vram::MemoryReportOptions options;
  vram::printMemoryTable(analysis, "main", options, os);
  vram::printMemoryJSON(analysis, "main", options, os);
  vram::printMemoryHTML(analysis, "main", options, os);
  return analysis.getPeakBytes();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(vram::fuzz::getRegistry());
  OwningOpRef<ModuleOp> module = vram::fuzz::importInput(data, size, context);
  if (!module || failed(verify(*module)))
    return 0;
  reportMemory(*module);
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  PassManager train(&context);
  if (failed(parsePassPipeline("vram-train{optimizer=adam}", train)) ||
      failed(train.run(*module)))
    return 0;
  uint64_t peak = reportMemory(*module);
  if (peak == 0)
    return 0;
  PassManager plan(&context);
  std::string budget = std::to_string(peak / 10 * 6);
  if (succeeded(parsePassPipeline(
          "vram-plan{print-plan=false budget=" + budget + "},vram-verify-plan",
          plan)))
    (void)plan.run(*module);
  return 0;
}
