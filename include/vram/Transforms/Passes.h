//===- Passes.h - vram-opt's passes -----------------------------*- C++ -*-===//

#ifndef VRAM_TRANSFORMS_PASSES_H
#define VRAM_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace vram {

#define GEN_PASS_DECL
#include "vram/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "vram/Transforms/Passes.h.inc"

/// vram-plan whose print-plan report goes to `planReport` instead of stdout
/// (vram-fit-plan-to-arena prints the report of the plan it keeps).
std::unique_ptr<mlir::Pass> createPlanPass(const PlanPassOptions &options,
                                           llvm::raw_ostream &planReport);

} // namespace vram

#endif // VRAM_TRANSFORMS_PASSES_H
