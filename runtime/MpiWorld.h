//===- MpiWorld.h - the process group of a per-rank program -----*- C++ -*-===//
//
// Both collective runtimes (MPI's, NCCL's) run one process per rank of
// MPI_COMM_WORLD: MPI starts on the first call and finalizes at exit, and
// the world's size must be the grid's.
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

/// Starts MPI on first use, checks that the world has `ranks` processes and
/// returns this one's rank.
inline int joinWorld(int64_t ranks) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    MPI_Init(nullptr, nullptr);
    std::atexit(finalizeWorld);
  }
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
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
