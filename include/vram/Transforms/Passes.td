//===- Passes.td - vram-opt's passes -----------------------*- tablegen -*-===//

#ifndef VRAM_TRANSFORMS_PASSES_TD
#define VRAM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintMemoryPass : Pass<"vram-print-memory", "mlir::ModuleOp"> {
  let summary = "Reports the memory every function needs: peak, categories, "
                "largest tensors, layers, timeline";
  let description = [{
    Runs the memory analysis (liveness over the schedule, aware of aliasing)
    on every function with a body and writes a report: a table for people,
    versioned JSON with the full timeline for tools, or one self-contained
    HTML page with a stacked memory-over-time plot. A module pass, so that
    reports of several functions go to one output in order. The IR is not
    changed.

    ```
    vram-opt model.mlir --vram-print-memory="format=json output=report.json"
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "table, json or html">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write the report to ('-': standard output)">,
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "memory budget, e.g. 16GB, 16GiB, 512MiB, 16e9">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "device profile (e.g. H100-80GB); without --budget, the budget is "
           "its capacity minus the CUDA context reserve">,
    Option<"top", "top", "unsigned", /*default=*/"10",
           "how many of the largest tensors to list">,
    Option<"layerDepth", "layer-depth", "unsigned", /*default=*/"2",
           "path components of node names that make a layer">,
  ];
  let statistics = [
    Statistic<"peakBytes", "peak-bytes", "Peak live bytes of the last function">,
  ];
}

def PrintLivenessPass : Pass<"vram-print-liveness", "mlir::ModuleOp"> {
  let summary = "Prints every buffer's live range and the live bytes at "
                "every program point (a test pass of the memory analysis)";
  let description = [{
    For each function: one line per buffer (the value that allocates it, its
    category, its bytes, the program points [first, last] it is live at,
    numbered from 1) and one line per op with the bytes live while it runs.
  }];
}

#endif // VRAM_TRANSFORMS_PASSES_TD
