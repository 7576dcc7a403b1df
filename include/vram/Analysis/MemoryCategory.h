//===- MemoryCategory.h - what each byte of a program is for ----*- C++ -*-===//
//
// Categories (vram::MemoryCategory, the vram dialect's enum) come from
// attributes set by the importer and by later passes, never from value
// names:
//   function argument `vram.param`: trainable | state | optimizer_state
//   | gradient (accumulated across micro-batches)
//   (absent: a program input); constants (ConstantLike ops) are state;
//   op attribute `vram.category`: the category of all its results;
//   op attribute `vram.phase = #vram.phase<backward>`: the op belongs to the
//   backward pass, so forward values it reads are saved for backward.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_MEMORYCATEGORY_H
#define VRAM_ANALYSIS_MEMORYCATEGORY_H

#include "vram/Dialect/Vram/VramDialect.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <optional>

namespace vram {

constexpr unsigned kNumMemoryCategories = getMaxEnumValForMemoryCategory() + 1;

/// Bytes per category.
using CategoryBytes = std::array<uint64_t, kNumMemoryCategories>;

/// Stable lower-case identifier ("saved_activation"), used in JSON and HTML
/// and in `#vram.category<...>`.
inline llvm::StringRef getCategoryKey(MemoryCategory category) {
  return stringifyMemoryCategory(category);
}
/// Human-readable name ("activations saved for backward").
llvm::StringRef getCategoryTitle(MemoryCategory category);

inline MemoryCategory categoryAt(unsigned index) {
  return static_cast<MemoryCategory>(index);
}

/// Whether `op` belongs to the backward pass (`#vram.phase<backward>`).
bool isBackwardOp(mlir::Operation *op);

/// The category of the buffer `value` allocates, from the attributes above.
/// Through any of its aliases, the buffer may be returned (`isReturned`) or
/// read by a backward op (`isReadByBackward`).
MemoryCategory classifyValue(mlir::Value value, bool isReturned,
                             bool isReadByBackward);

} // namespace vram

#endif // VRAM_ANALYSIS_MEMORYCATEGORY_H
