//===- MemoryCategory.h - what each byte of a program is for ----*- C++ -*-===//
//
// Categories come from attributes set by the importer and by later passes,
// never from value names:
//   function argument `vram.param`: "trainable" | "state" | "optimizer_state"
//   | "gradient" (accumulated across micro-batches)
//   (absent: a program input); constants (ConstantLike ops) are state;
//   op attribute `vram.category`: the category of all its results
//   ("gradient", "optimizer_state", "parameter", "workspace", ...);
//   op attribute `vram.phase = "backward"`: the op belongs to the backward
//   pass, so forward values it reads are saved for backward.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_MEMORYCATEGORY_H
#define VRAM_ANALYSIS_MEMORYCATEGORY_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <optional>

namespace vram {

enum class MemoryCategory : unsigned {
  Parameter,       // trainable weights
  State,           // non-trainable model data: BatchNorm statistics, constants
  Input,           // program inputs (the batch)
  SavedActivation, // forward values kept for the backward pass
  Activation,      // transient intermediate values
  Output,          // values the program returns
  Gradient,        // gradients of parameters
  OptimizerState,  // momentum, Adam moments, fp32 master weights
  Workspace,       // kernel scratch memory
};
constexpr unsigned kNumMemoryCategories = 9;

/// Bytes per category.
using CategoryBytes = std::array<uint64_t, kNumMemoryCategories>;

/// Stable lower-case identifier ("saved_activation"), used in JSON and HTML.
llvm::StringRef getCategoryKey(MemoryCategory category);
/// Human-readable name ("activations saved for backward").
llvm::StringRef getCategoryTitle(MemoryCategory category);
std::optional<MemoryCategory> parseCategoryKey(llvm::StringRef key);

inline MemoryCategory categoryAt(unsigned index) {
  return static_cast<MemoryCategory>(index);
}

/// Whether `op` belongs to the backward pass (`vram.phase = "backward"`).
bool isBackwardOp(mlir::Operation *op);

/// The category of the buffer `value` allocates, from the attributes above.
/// Through any of its aliases, the buffer may be returned (`isReturned`) or
/// read by a backward op (`isReadByBackward`).
MemoryCategory classifyValue(mlir::Value value, bool isReturned,
                             bool isReadByBackward);

} // namespace vram

#endif // VRAM_ANALYSIS_MEMORYCATEGORY_H
