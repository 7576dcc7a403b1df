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
constexpr int kMemoryReportSchemaVersion = 1;

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
};

/// What the report's numbers include and exclude, one sentence each; the
/// table, JSON and HTML reports all print them.
llvm::ArrayRef<llvm::StringRef> getReportIncludes();
llvm::ArrayRef<llvm::StringRef> getReportExcludes();

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
