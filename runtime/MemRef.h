//===- MemRef.h - memref descriptors as the runtime libraries see them
//-*-C++-*-//
//
// MLIR's C interface (`llvm.emit_c_interface`) passes each memref argument as
// a pointer to its descriptor; the kernel libraries read them through this.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNTIME_MEMREF_H
#define VRAM_RUNTIME_MEMREF_H

#include <cstdint>

namespace vram::runtime {
/// A ranked memref descriptor, as MLIR's LLVM lowering lays it out.
template <typename Element, int Rank> struct MemRef {
  Element *allocated;
  Element *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];

  Element *data() const { return aligned + offset; }
};
} // namespace vram::runtime

#endif // VRAM_RUNTIME_MEMREF_H
