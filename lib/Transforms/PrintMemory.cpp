//===- PrintMemory.cpp - the vram-print-memory pass -----------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Planning/IRPlanning.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#define DEBUG_TYPE "vram-print-memory"

namespace vram {
#define GEN_PASS_DEF_PRINTMEMORYPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

namespace {
struct PrintMemoryPass : public vram::impl::PrintMemoryPassBase<PrintMemoryPass> {
  using PrintMemoryPassBase::PrintMemoryPassBase;

  /// An explicit budget wins; otherwise a device gives its usable memory.
  LogicalResult resolveBudget(MemoryReportOptions &options) {
    if (!budget.empty()) {
      llvm::Expected<uint64_t> bytes = parseByteSize(budget);
      if (!bytes)
        return getOperation().emitError() << llvm::toString(bytes.takeError());
      options.budget = *bytes;
      options.budgetSource = "the budget " + budget;
      return success();
    }
    if (device.empty())
      return success();
    llvm::Expected<const DeviceProfile &> found = requireDeviceProfile(device);
    if (!found)
      return getOperation().emitError() << llvm::toString(found.takeError());
    const DeviceProfile *profile = &*found;
    options.budget = usableBytes(*profile);
    options.budgetSource = profile->name + ": " +
                           formatBinaryBytes(profile->memoryBytes) +
                           " minus a CUDA context reserve of " +
                           formatBinaryBytes(profile->contextReserveBytes);
    return success();
  }

  void runOnOperation() override {
    if (format != "table" && format != "json" && format != "html") {
      getOperation().emitError() << "vram-print-memory: unknown format '"
                                 << format << "' (table, json or html)";
      return signalPassFailure();
    }
    MemoryReportOptions options;
    options.topTensors = top;
    options.layerDepth = layerDepth;
    if (failed(resolveBudget(options)))
      return signalPassFailure();

    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &errorMessage);
    if (!file) {
      getOperation().emitError() << "vram-print-memory: " << errorMessage;
      return signalPassFailure();
    }
    SmallVector<FunctionOpInterface> functions;
    for (auto func : getOperation().getOps<FunctionOpInterface>())
      if (!func.isExternal())
        functions.push_back(func);
    if (functions.empty()) {
      getOperation().emitError()
          << "vram-print-memory: the input has no function with a body to "
             "report on";
      return signalPassFailure();
    }
    // One document per output: several functions' JSON reports form an
    // array; HTML pages cannot be joined.
    bool several = functions.size() > 1;
    if (several && format == "html") {
      getOperation().emitError()
          << "vram-print-memory: an HTML report shows one function; the "
             "input has "
          << functions.size();
      return signalPassFailure();
    }
    if (several && format == "json")
      file->os() << "[\n";
    for (auto [index, func] : llvm::enumerate(functions)) {
      if (several && format == "json" && index)
        file->os() << ",\n";
      auto &analysis = getChildAnalysis<MemoryAnalysis>(func);
      if (!analysis.isValid()) {
        emitAnalysisErrors(analysis, func);
        return signalPassFailure();
      }
      peakBytes = analysis.getPeakBytes();
      options.plan = readPlanSummary(func);
      if (format == "table")
        printMemoryTable(analysis, func.getName(), options, file->os());
      else if (format == "json")
        printMemoryJSON(analysis, func.getName(), options, file->os());
      else
        printMemoryHTML(analysis, func.getName(), options, file->os());
    }
    if (several && format == "json")
      file->os() << "]\n";
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
