//===- Passes.td - passes of vram-opt's lowering pipelines -*- tablegen -*-===//
//
// Steps of the CPU pipeline that upstream MLIR has no pass for.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PIPELINES_PASSES_TD
#define VRAM_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def EmitCInterfacePass : Pass<"vram-emit-c-interface", "mlir::ModuleOp"> {
  let summary = "Marks the entry function for a C-callable wrapper";
  let description = [{
    Sets `llvm.emit_c_interface` on the entry `func.func`, so that
    `convert-func-to-llvm` also emits `_mlir_ciface_<name>`, which takes
    every memref as a pointer to its descriptor and returns results through
    a pointer: the calling convention `vram-run` (and any C caller) uses.

    ```mlir
    func.func @main(%a: memref<4xf32>) -> memref<4xf32>
    // becomes
    func.func @main(%a: memref<4xf32>) -> memref<4xf32>
        attributes {llvm.emit_c_interface}
    ```
    A missing entry function is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "Name of the entry function">
  ];
}

def DecomposeAggregatedOpsPass
    : InterfacePass<"vram-decompose-aggregated-ops",
                    "mlir::FunctionOpInterface"> {
  let summary = "Decomposes linalg aggregated ops (linalg.softmax) into "
                "structured ops";
  let description = [{
    Ops such as `linalg.softmax` implement `AggregatedOpInterface` but are
    not structured ops: `convert-linalg-to-loops` cannot lower them. This
    pass calls each op's own `decomposeOperation` (max, sub + exp, sum,
    div as `linalg.generic`s on tensors), which upstream exposes only as a
    transform-dialect op. An op whose decomposition fails is an error.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // VRAM_PIPELINES_PASSES_TD
