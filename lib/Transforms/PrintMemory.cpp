//===- PrintMemory.cpp - the vram-print-memory pass -----------------------===//

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Dialect/Vram/VramDialect.h"
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

/// The summary `vram-plan` left on `func`, if it was planned.
static std::optional<PlanSummary> getPlanSummary(FunctionOpInterface func) {
  auto summary = func->getAttrOfType<DictionaryAttr>(VramDialect::kPlanAttrName);
  auto budget = func->getAttrOfType<IntegerAttr>(VramDialect::kBudgetAttrName);
  auto peak =
      func->getAttrOfType<IntegerAttr>(VramDialect::kPlannedPeakAttrName);
  if (!summary || !budget || !peak)
    return std::nullopt;
  auto i64 = [&](StringRef name) -> uint64_t {
    auto value = summary.getAs<IntegerAttr>(name);
    return value ? value.getValue().getZExtValue() : 0;
  };
  auto f64 = [&](StringRef name) {
    auto value = summary.getAs<FloatAttr>(name);
    return value ? value.getValueAsDouble() : 0.0;
  };
  PlanSummary plan;
  plan.budget = budget.getValue().getZExtValue();
  plan.plannedPeak = peak.getValue().getZExtValue();
  plan.unplannedPeak = i64("unplanned_peak");
  plan.recomputations = i64("recomputations");
  plan.offloadedBytes = i64("offloaded_bytes");
  plan.hostArguments = i64("host_arguments");
  plan.hostArgumentBytes = i64("host_argument_bytes");
  plan.computeSeconds = f64("compute_seconds");
  plan.recomputeSeconds = f64("recompute_seconds");
  plan.exposedCopySeconds = f64("exposed_copy_seconds");
  if (auto device = summary.getAs<StringAttr>("device"))
    plan.device = device.str();
  return plan;
}

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
    for (auto func : getOperation().getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      auto &analysis = getChildAnalysis<MemoryAnalysis>(func);
      if (!analysis.isValid()) {
        emitAnalysisErrors(analysis, func);
        return signalPassFailure();
      }
      peakBytes = analysis.getPeakBytes();
      options.plan = getPlanSummary(func);
      if (format == "table")
        printMemoryTable(analysis, func.getName(), options, file->os());
      else if (format == "json")
        printMemoryJSON(analysis, func.getName(), options, file->os());
      else
        printMemoryHTML(analysis, func.getName(), options, file->os());
    }
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
