//===- Passes.h - vram-opt's passes -----------------------------*- C++ -*-===//

#ifndef VRAM_TRANSFORMS_PASSES_H
#define VRAM_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace vram {

#define GEN_PASS_DECL
#include "vram/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "vram/Transforms/Passes.h.inc"

/// vram-plan whose print-plan report goes to `planReport` instead of stdout
/// (vram-fit-plan-to-arena prints the report of the plan it keeps).
std::unique_ptr<mlir::Pass> createPlanPass(const PlanPassOptions &options,
                                           llvm::raw_ostream &planReport);

/// Adds the passes that build a training step: vram-train with
/// `trainOptions` and, with `parallelOptions` (--parallel's string: `tp=`
/// for vram-tensor-parallel, which runs first, on the forward pass; `dp=`
/// and `zero=` for vram-parallelize, after vram-train), one rank's program.
/// Errors go to `report`, prefixed by the flag.
mlir::LogicalResult
addTrainingStepPasses(mlir::OpPassManager &pm, llvm::StringRef trainOptions,
                      std::optional<llvm::StringRef> parallelOptions,
                      llvm::function_ref<void(const llvm::Twine &)> report);

} // namespace vram

#endif // VRAM_TRANSFORMS_PASSES_H
