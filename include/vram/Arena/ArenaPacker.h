//===- ArenaPacker.h - Static placement of buffers in one arena -*- C++ -*-===//
//
// Given buffers with sizes, alignments and live intervals over program
// points, chooses an offset for each in one arena so that no two buffers
// live at the same point share a byte, and the arena is as small as
// possible. The problem is NP-hard (dynamic storage allocation); the packer
// runs best-fit placement over several orderings, then a local search on the
// order directed by the max-live lower bound, and
// reports how far from that bound it ended. See docs/arena.md.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ARENA_ARENAPACKER_H
#define VRAM_ARENA_ARENAPACKER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace vram::arena {

/// One buffer to place.
struct ArenaBuffer {
  uint64_t size = 0;
  /// A power of two; the buffer's offset is a multiple of it.
  uint64_t alignment = 1;
  /// Live at program points [begin, end], both inclusive.
  unsigned begin = 0, end = 0;

  /// The bytes the buffer occupies: its size rounded up to its alignment.
  /// Placing slots rather than sizes keeps the arena's occupied intervals
  /// equal to what the lower bound counts, so the bound is exact; it costs
  /// at most alignment - 1 bytes at the top of the arena.
  uint64_t slot() const;
  bool overlapsInTime(const ArenaBuffer &other) const {
    return begin <= other.end && other.begin <= end;
  }
};

/// An offset per buffer (in input order) and the arena's size: the largest
/// offset + slot.
struct Placement {
  std::vector<uint64_t> offsets;
  uint64_t arenaSize = 0;
};

/// The orders in which best-fit placement may consider buffers.
enum class Ordering {
  /// Largest slot first (the classic greedy-by-size).
  Size,
  /// Largest slot x lifetime first: the buffers that are hard to fit anywhere.
  SizeTimesLifetime,
  /// Longest lifetime first.
  Lifetime,
  /// Earliest begin first, largest first among equal begins: the order an
  /// online allocator sees.
  Begin,
  /// Greedy by breadth (as TFLite's planner): the buffers live where the
  /// most bytes are live first, largest first among equals, so the buffers
  /// of the fullest point stack without holes.
  Breadth,
};
constexpr Ordering kAllOrderings[] = {
    Ordering::Size, Ordering::SizeTimesLifetime, Ordering::Lifetime,
    Ordering::Begin, Ordering::Breadth};
llvm::StringRef getOrderingName(Ordering ordering);

struct PackOptions {
  /// The local search's effort, in placements of the whole order: it may
  /// compare as many pairs of buffers as this many quadratic best-fit
  /// placements would (rounds x n^2). Its own placements redo only the part
  /// of the order after the moved buffer and compare only buffers live at
  /// the same time, so it runs many more (cheaper) rounds than this. It
  /// stops early at the lower bound. 0 keeps the best ordering.
  unsigned localSearchRounds = 300;
  /// Caps that effort on large functions, in the same unit (pairs of
  /// buffers compared): about half a second on the build machine for
  /// 2,300 buffers.
  uint64_t searchPairLimit = 60'000'000;
  /// Seeds the local search's choices, so results are reproducible.
  uint64_t seed = 1;
};

struct PackResult {
  Placement placement;
  /// Max over program points of the slots live there: no placement is
  /// smaller.
  uint64_t lowerBound = 0;
  /// Every slot after the previous one, without reuse: what an arena with no
  /// packing needs.
  uint64_t naiveSize = 0;
  /// The arena of plain greedy-by-size best fit, for comparison.
  uint64_t greedySize = 0;
  /// What produced the result: an ordering's name, "local search", or
  /// "no reuse" when nothing beat the naive layout.
  std::string method;
  /// Moves the local search tried (each a partial re-placement).
  unsigned searchRounds = 0;

  /// Arena size over the lower bound (1.0 when the bound is 0).
  double ratio() const;
};

/// Checks what the packer assumes of its input: power-of-two alignments,
/// begin <= end, and a naive size that fits in 64 bits (then every
/// placement the packer returns does too).
llvm::Error validateBuffers(llvm::ArrayRef<ArenaBuffer> buffers);

/// Max over program points of the sum of the slots live there.
uint64_t computeLowerBound(llvm::ArrayRef<ArenaBuffer> buffers);

/// Sum of all slots.
uint64_t computeNaiveSize(llvm::ArrayRef<ArenaBuffer> buffers);

/// Buffer indices in the given order; ties broken by input index so the
/// result is deterministic.
std::vector<unsigned> makeOrder(llvm::ArrayRef<ArenaBuffer> buffers,
                                Ordering ordering);

/// Places the buffers one by one in `order` (a permutation of all indices):
/// each goes into the smallest gap, among the buffers already placed that
/// overlap it in time, that holds its slot at an aligned offset (lowest
/// offset among equal gaps), or on top of them when no gap holds it.
Placement placeBestFit(llvm::ArrayRef<ArenaBuffer> buffers,
                       llvm::ArrayRef<unsigned> order);

/// The packer: best fit over every ordering, then a local search that moves the
/// buffers reaching the arena's top earlier in the order: briefly from every
/// start, then from the best. Never worse than plain greedy by size nor the
/// naive layout. Buffers must pass validateBuffers().
PackResult packArena(llvm::ArrayRef<ArenaBuffer> buffers,
                     const PackOptions &options = {});

/// Checks a placement independently of how it was made: one aligned offset
/// per buffer, no two buffers overlapping in both time and space, every
/// slot inside the arena.
llvm::Error verifyPlacement(llvm::ArrayRef<ArenaBuffer> buffers,
                            const Placement &placement);

} // namespace vram::arena

#endif // VRAM_ARENA_ARENAPACKER_H
