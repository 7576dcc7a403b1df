//===- NodeDiagnostics.cpp - diagnostics of imported IR, by node ----------===//

#include "vram/Import/NodeDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace vram {

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

static void print(Diagnostic &diag) {
  printImportLocation(diag.getLocation(), llvm::errs());
  llvm::errs() << ": " << severityName(diag.getSeverity()) << ": " << diag
               << "\n";
}

NodeDiagnosticPrinter::NodeDiagnosticPrinter(MLIRContext &context)
    : handler(&context, handle) {
  context.printOpOnDiagnostic(false);
}

LogicalResult NodeDiagnosticPrinter::handle(Diagnostic &diag) {
  print(diag);
  for (Diagnostic &note : diag.getNotes())
    print(note);
  return success();
}

} // namespace vram
