//===- KeptBlocks.h - large blocks kept from call to call -------*- C++ -*-===//
//
// The allocator compiled code calls in place of malloc and free. Each call
// of a lowered function allocates its arena (tens to hundreds of MB) and
// frees it at the end; from the C library that is a fresh mapping every
// call, faulted in page by page (a fifth of MobileNetV2's run time at
// batch 8). Like a framework's caching allocator, large blocks freed here
// are kept and handed out again for the next request of the same size.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNNER_KEPTBLOCKS_H
#define VRAM_RUNNER_KEPTBLOCKS_H

#include <cstddef>

namespace vram {

/// malloc, from a kept block of exactly `size` bytes when there is one.
void *allocateKeptBlock(size_t size);

/// free, keeping blocks of at least kMinKeptBlockBytes for reuse.
void freeKeptBlock(void *pointer);

/// Returns every kept block to the C library.
void releaseKeptBlocks();

/// Smaller blocks are left to the C library, whose heap reuses them anyway.
constexpr size_t kMinKeptBlockBytes = size_t(1) << 20;

} // namespace vram

#endif // VRAM_RUNNER_KEPTBLOCKS_H
