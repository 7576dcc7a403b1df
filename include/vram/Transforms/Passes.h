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

} // namespace vram

#endif // VRAM_TRANSFORMS_PASSES_H
