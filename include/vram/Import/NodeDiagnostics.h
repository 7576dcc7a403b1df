//===- NodeDiagnostics.h - diagnostics of imported IR, by node --*- C++ -*-===//
//
// Imported ops are located at `NameLoc(node name, FileLineColLoc(file, 0,
// 0))`. Printed as MLIR prints locations, an error reads `file:0:0:` plus a
// generic-form op dump; a model's user wants the node instead.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_IMPORT_NODEDIAGNOSTICS_H
#define VRAM_IMPORT_NODEDIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace vram {

/// While alive, prints the diagnostics of `context` (which holds imported
/// IR) to stderr as `file: node 'name': error: message`, notes likewise, and
/// turns off the op dump on diagnostics.
class NodeDiagnosticPrinter {
public:
  explicit NodeDiagnosticPrinter(mlir::MLIRContext &context);

  /// Prints `diag` and its notes; the diagnostic is handled. For a handler
  /// registered elsewhere (a pass manager's context).
  static mlir::LogicalResult handle(mlir::Diagnostic &diag);

private:
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace vram

#endif // VRAM_IMPORT_NODEDIAGNOSTICS_H
