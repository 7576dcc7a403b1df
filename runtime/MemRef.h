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

/// An unranked memref (memref<*xT>) as the C interface passes it: the rank
/// and a ranked descriptor {allocated, aligned, offset, sizes[rank],
/// strides[rank]}.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// The first element and the element count of an unranked memref's data, or
/// a null `data` when it is not contiguous.
struct Span {
  char *data;
  int64_t elements;
};

inline Span getContiguousSpan(const UnrankedMemRef *memref,
                              int64_t elementBytes) {
  auto *fields = static_cast<int64_t *>(memref->descriptor);
  char *aligned = reinterpret_cast<char **>(fields)[1];
  int64_t offset = fields[2];
  const int64_t *sizes = fields + 3;
  const int64_t *strides = sizes + memref->rank;
  int64_t elements = 1;
  for (int64_t d = memref->rank - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != elements)
      return {nullptr, 0};
    elements *= sizes[d];
  }
  return {aligned + offset * elementBytes, elements};
}
} // namespace vram::runtime

#endif // VRAM_RUNTIME_MEMREF_H
