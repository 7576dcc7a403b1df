//===- MemoryReport.h - memory reports: table, JSON, HTML -------*- C++ -*-===//

#ifndef VRAM_ANALYSIS_MEMORYREPORT_H
#define VRAM_ANALYSIS_MEMORYREPORT_H

#include "vram/Analysis/MemoryAnalysis.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace vram {

/// The version of the JSON report schema (docs/memory.md). Bump it on any
/// change a consumer could notice.
/// 2: "phases" (the peak of each phase of a training step, split into model
/// states, saved activations, transient and other).
/// 3: "plan" (what a memory plan did, when the function was planned).
constexpr int kMemoryReportSchemaVersion = 3;

/// What a memory plan did to a function (`vram.plan`, set by vram-plan):
/// the headline of every report of a planned function.
struct PlanSummary {
  uint64_t budget = 0;
  uint64_t plannedPeak = 0;
  /// Device bytes of the planned program lowered to buffers (its arena with
  /// the holes packing leaves, and the arguments on the device), when
  /// vram-fit-plan-to-arena measured them.
  std::optional<uint64_t> loweredPeak;
  uint64_t unplannedPeak = 0;
  uint64_t recomputations = 0;
  uint64_t offloadedBytes = 0;
  uint64_t hostArguments = 0;
  uint64_t hostArgumentBytes = 0;
  /// Compute time of the unplanned step, and what the plan adds to it.
  double computeSeconds = 0;
  double recomputeSeconds = 0;
  double exposedCopySeconds = 0;
  /// The device profile the times assume.
  std::string device;

  double overhead() const {
    return computeSeconds > 0
               ? (recomputeSeconds + exposedCopySeconds) / computeSeconds
               : 0;
  }
};

/// One line: budget, planned and unplanned peak, what was recomputed and
/// offloaded, arguments in host memory and the overhead with its split.
std::string formatPlanSummary(const PlanSummary &plan);

struct MemoryReportOptions {
  /// Bytes the program's tensors may use, when the user gave a budget.
  std::optional<uint64_t> budget;
  /// Where the budget came from, e.g. "--budget=16GB" or "H100-80GB: 80 GiB
  /// minus 512 MiB CUDA context reserve".
  std::string budgetSource;
  /// How many of the largest tensors to list.
  unsigned topTensors = 10;
  /// Layers are node-name prefixes of this many path components
  /// ("/layer1/layer1.0/conv1/Conv" at depth 2: "layer1/layer1.0").
  unsigned layerDepth = 2;
  /// The plan of a planned function: reports start with it.
  std::optional<PlanSummary> plan;
};

/// What the report's numbers include and exclude, one sentence each; the
/// table, JSON and HTML reports all print them.
llvm::ArrayRef<llvm::StringRef> getReportIncludes();
llvm::ArrayRef<llvm::StringRef> getReportExcludes();

/// The live bytes of one program point in the practitioner's groups.
struct MemoryGroups {
  /// Parameters, their gradients and the optimizer state (ZeRO's "model
  /// states").
  uint64_t modelStates = 0;
  /// Activations saved for backward.
  uint64_t savedActivations = 0;
  /// Activations that die within their phase, and kernel workspace.
  uint64_t transient = 0;
  /// Inputs, outputs, non-trainable state and constants.
  uint64_t other = 0;
};
MemoryGroups groupCategories(const CategoryBytes &bytes);

/// The peak of one phase of a training step: the ops tagged
/// `#vram.phase<backward>` or `#vram.phase<optimizer>`, and the others
/// (forward).
struct PhasePeak {
  llvm::StringRef phase;
  uint64_t bytes = 0;
  /// The program point of the phase's peak.
  unsigned point = 0;
  MemoryGroups groups;
};
/// The phases present, in the order forward, backward, optimizer; empty for
/// a program without phase tags (inference).
llvm::SmallVector<PhasePeak> computePhasePeaks(const MemoryAnalysis &analysis);

/// The layer (node-name prefix) an op belongs to.
std::string getLayerName(mlir::Operation *op, unsigned depth);

void printMemoryTable(const MemoryAnalysis &analysis, llvm::StringRef function,
                      const MemoryReportOptions &options, llvm::raw_ostream &os);

void printMemoryJSON(const MemoryAnalysis &analysis, llvm::StringRef function,
                     const MemoryReportOptions &options, llvm::raw_ostream &os);

/// One self-contained HTML page: a stacked memory-over-time plot by
/// category with the budget line; hovering shows the op and its largest live
/// tensors. Long schedules are sampled to at most `maxPoints` points, always
/// keeping the peak.
void printMemoryHTML(const MemoryAnalysis &analysis, llvm::StringRef function,
                     const MemoryReportOptions &options, llvm::raw_ostream &os,
                     unsigned maxPoints = 1500);

} // namespace vram

#endif // VRAM_ANALYSIS_MEMORYREPORT_H
