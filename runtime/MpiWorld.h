//===- MpiWorld.h - the process group of a per-rank program -----*- C++ -*-===//
//
// Both collective runtimes (MPI's, NCCL's) run one process per rank of
// MPI_COMM_WORLD: MPI starts on the first call and finalizes at exit, and
// the world's size must be the grid's. A collective runs over one axis of
// the grid, a RankGroup of the world.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNTIME_MPIWORLD_H
#define VRAM_RUNTIME_MPIWORLD_H

// The C API only (MPI_C, no C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "MemRef.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace vram::runtime {

/// Reports an error and stops this process; with `abortWorld`, all of them
/// (an error only this rank sees would leave the others waiting).
[[noreturn]] inline void failCollective(const char *message,
                                        bool abortWorld = true) {
  std::fprintf(stderr, "vram collectives: error: %s\n", message);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized && abortWorld)
    MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

inline void finalizeWorld() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

/// Starts MPI on first use and returns this process's rank in the world.
inline int joinWorld() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    MPI_Init(nullptr, nullptr);
    std::atexit(finalizeWorld);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int getWorldSize() {
  joinWorld();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Joins the world, checks that it has `ranks` processes (the program's
/// grid) and returns this one's rank.
inline int joinWorld(int64_t ranks) {
  int rank = joinWorld(), size = getWorldSize();
  if (size != ranks) {
    char message[160];
    std::snprintf(message, sizeof message,
                  "the program was built for %lld ranks, the MPI world has "
                  "%d (run it with mpirun -np %lld)",
                  static_cast<long long>(ranks), size,
                  static_cast<long long>(ranks));
    // Every rank sees the same sizes: each stops on its own.
    failCollective(message, /*abortWorld=*/false);
  }
  return rank;
}

/// The ranks a collective spans, on one axis of the row-major device grid:
/// `size` ranks, `stride` apart in the world (the product of the later
/// axes' sizes). The world rank w is in the group of the ranks that differ
/// from it on that axis only, at index (w / stride) % size.
struct RankGroup {
  int64_t size, stride;

  int64_t indexOf(int64_t worldRank) const { return worldRank / stride % size; }
  /// What tells the world's groups apart (MPI_Comm_split's color).
  int64_t colorOf(int64_t worldRank) const {
    return worldRank / (stride * size) * stride + worldRank % stride;
  }
  /// Checks that the group fits the world: every rank is in one group.
  void check() const {
    int64_t world = getWorldSize();
    if (size < 1 || stride < 1 || world % (size * stride) != 0) {
      char message[160];
      std::snprintf(message, sizeof message,
                    "a group of %lld ranks %lld apart does not tile the MPI "
                    "world of %lld",
                    static_cast<long long>(size),
                    static_cast<long long>(stride),
                    static_cast<long long>(world));
      failCollective(message);
    }
  }
};

/// A collective's buffer, which must be contiguous.
inline Span getCollectiveSpan(const UnrankedMemRef *memref,
                              int64_t elementBytes) {
  Span span = getContiguousSpan(memref, elementBytes);
  if (!span.data)
    failCollective("a collective's buffer is not contiguous");
  return span;
}

} // namespace vram::runtime

#endif // VRAM_RUNTIME_MPIWORLD_H
