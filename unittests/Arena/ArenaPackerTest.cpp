//===- ArenaPackerTest.cpp - Arena packer: hand cases and properties ------===//

#include "vram/Arena/ArenaPacker.h"

#include "llvm/Support/Error.h"
#include "gtest/gtest.h"

#include <random>

using namespace vram::arena;

namespace {

std::string errorText(llvm::Error error) {
  return llvm::toString(std::move(error));
}

// Three equal buffers in a chain, each overlapping the next:
//   A [0,1], B [1,2], C [2,3], 100 bytes each.
// Two are live at points 1 and 2, so the bound is 200. A and C never meet,
// so they can share offset 0 with B above them: 200 is optimal.
TEST(ArenaPacker, ChainReusesTheFirstBuffer) {
  std::vector<ArenaBuffer> buffers = {
      {100, 1, 0, 1}, {100, 1, 1, 2}, {100, 1, 2, 3}};
  EXPECT_EQ(computeLowerBound(buffers), 200u);
  EXPECT_EQ(computeNaiveSize(buffers), 300u);
  PackResult result = packArena(buffers);
  ASSERT_FALSE(verifyPlacement(buffers, result.placement));
  EXPECT_EQ(result.placement.arenaSize, 200u);
  EXPECT_EQ(result.placement.offsets, (std::vector<uint64_t>{0, 100, 0}));
  EXPECT_EQ(result.ratio(), 1.0);
}

// Best fit takes the smallest gap that holds the buffer, not the lowest.
// Placed in this order:
//   P0 300 B [0,0] -> 0,   occupies [0, 300)
//   P1 100 B [0,3] -> 300, on top of P0
//   P2 100 B [0,0] -> 400, on top of P0 and P1
//   P3  50 B [0,3] -> 500, on top of everything
//   Q  100 B [1,2]: only P1 [300,400) and P3 [500,550) are live with it, so
//   the gaps are [0,300) (300 B) and [400,500) (100 B): best fit takes 400
//   (first fit would take 0).
TEST(ArenaPacker, BestFitTakesTheSmallestGap) {
  std::vector<ArenaBuffer> buffers = {{300, 1, 0, 0},
                                      {100, 1, 0, 3},
                                      {100, 1, 0, 0},
                                      {50, 1, 0, 3},
                                      {100, 1, 1, 2}};
  Placement placement = placeBestFit(buffers, {0, 1, 2, 3, 4});
  ASSERT_FALSE(verifyPlacement(buffers, placement));
  EXPECT_EQ(placement.offsets,
            (std::vector<uint64_t>{0, 300, 400, 500, 400}));
  EXPECT_EQ(placement.arenaSize, 550u);
}

// A 10-byte buffer aligned to 64 occupies a 64-byte slot; the unaligned
// 10-byte buffer fits right after it: 64 + 10 = 74, which is also the bound.
TEST(ArenaPacker, AlignmentRoundsSlots) {
  std::vector<ArenaBuffer> buffers = {{10, 1, 0, 1}, {10, 64, 0, 1}};
  EXPECT_EQ(buffers[1].slot(), 64u);
  EXPECT_EQ(computeLowerBound(buffers), 74u);
  PackResult result = packArena(buffers);
  ASSERT_FALSE(verifyPlacement(buffers, result.placement));
  EXPECT_EQ(result.placement.offsets, (std::vector<uint64_t>{64, 0}));
  EXPECT_EQ(result.placement.arenaSize, 74u);
}

// A buffer ending at point 4 and one beginning at point 5 never coexist:
// the bound is the larger one alone, and both go at offset 0.
TEST(ArenaPacker, AdjacentIntervalsShareStorage) {
  std::vector<ArenaBuffer> buffers = {{512, 256, 0, 4}, {1024, 256, 5, 9}};
  EXPECT_EQ(computeLowerBound(buffers), 1024u);
  PackResult result = packArena(buffers);
  EXPECT_EQ(result.placement.offsets, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(result.placement.arenaSize, 1024u);
}

// Empty buffers take no space and never conflict.
TEST(ArenaPacker, EmptyBuffers) {
  std::vector<ArenaBuffer> buffers = {{0, 256, 0, 9}, {8, 8, 3, 3}};
  EXPECT_EQ(computeLowerBound(buffers), 8u);
  PackResult result = packArena(buffers);
  ASSERT_FALSE(verifyPlacement(buffers, result.placement));
  EXPECT_EQ(result.placement.arenaSize, 8u);
  EXPECT_EQ(packArena({}).placement.arenaSize, 0u);
}

TEST(ArenaPacker, ValidateRejectsBadInput) {
  EXPECT_NE(errorText(validateBuffers({{8, 3, 0, 1}})).find("power of two"),
            std::string::npos);
  EXPECT_NE(errorText(validateBuffers({{8, 8, 2, 1}})).find("empty"),
            std::string::npos);
  EXPECT_NE(errorText(validateBuffers({{UINT64_MAX - 10, 256, 0, 1}}))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(errorText(validateBuffers(
                          {{UINT64_MAX / 2 + 1, 1, 0, 0}, {UINT64_MAX / 2 + 1, 1, 0, 0}}))
                .find("overflows"),
            std::string::npos);
  EXPECT_FALSE(errorText(validateBuffers({{8, 8, 1, 1}})).size());
}

TEST(ArenaPacker, VerifyCatchesOverlapAndMisalignment) {
  std::vector<ArenaBuffer> buffers = {{100, 4, 0, 2}, {100, 4, 2, 3}};
  EXPECT_NE(errorText(verifyPlacement(buffers, {{0, 52}, 152})).find("overlap"),
            std::string::npos);
  EXPECT_NE(errorText(verifyPlacement(buffers, {{0, 102}, 202}))
                .find("alignment"),
            std::string::npos);
  EXPECT_NE(errorText(verifyPlacement(buffers, {{0, 100}, 150})).find("past"),
            std::string::npos);
  EXPECT_FALSE(errorText(verifyPlacement(buffers, {{0, 100}, 200})).size());
}

/// Random instances: sizes spread over four orders of magnitude (like
/// activations next to small statistics), intervals of random length.
std::vector<ArenaBuffer> makeRandomInstance(std::mt19937_64 &random,
                                            bool uniformAlignment) {
  const uint64_t alignments[] = {1, 8, 64, 256};
  unsigned count = 1 + random() % 80;
  unsigned points = 1 + random() % 60;
  std::vector<ArenaBuffer> buffers(count);
  for (ArenaBuffer &buffer : buffers) {
    buffer.size = (random() % 4 == 0) ? random() % 16
                                      : 1 + random() % (1u << (random() % 20));
    buffer.alignment = uniformAlignment ? 256 : alignments[random() % 4];
    buffer.begin = random() % points;
    buffer.end = buffer.begin + random() % (points - buffer.begin);
  }
  return buffers;
}

// Every placement is feasible (no overlap in time x space, aligned, inside
// the arena), never below the bound, and never worse than no reuse; the
// full packer is never worse than plain greedy by size.
TEST(ArenaPackerProperty, RandomInstances) {
  std::mt19937_64 random(20240611);
  unsigned reachedBound = 0;
  const unsigned instances = 400;
  for (unsigned trial = 0; trial < instances; ++trial) {
    bool uniform = trial % 2 == 0;
    std::vector<ArenaBuffer> buffers = makeRandomInstance(random, uniform);
    ASSERT_FALSE(validateBuffers(buffers)) << "trial " << trial;
    uint64_t bound = computeLowerBound(buffers);
    uint64_t naive = computeNaiveSize(buffers);
    for (Ordering ordering : kAllOrderings) {
      Placement placement =
          placeBestFit(buffers, makeOrder(buffers, ordering));
      ASSERT_FALSE(verifyPlacement(buffers, placement))
          << "trial " << trial << " ordering "
          << getOrderingName(ordering).str();
      EXPECT_GE(placement.arenaSize, bound);
      // With one alignment every offset is a multiple of it, so a buffer
      // placed on top of others starts at most at the sum of the slots
      // placed before it: best fit alone never exceeds no reuse.
      if (uniform)
        EXPECT_LE(placement.arenaSize, naive) << "trial " << trial;
    }
    PackResult result = packArena(buffers);
    ASSERT_FALSE(verifyPlacement(buffers, result.placement))
        << "trial " << trial;
    EXPECT_EQ(result.lowerBound, bound);
    EXPECT_EQ(result.naiveSize, naive);
    EXPECT_GE(result.placement.arenaSize, bound) << "trial " << trial;
    EXPECT_LE(result.placement.arenaSize, naive) << "trial " << trial;
    EXPECT_LE(result.placement.arenaSize, result.greedySize)
        << "trial " << trial;
    reachedBound += result.placement.arenaSize == bound;
  }
  // Not a property, a regression guard on quality: the bound is not always
  // reachable on random instances, but the packer reaches it on 271 of
  // these 400 (255 before the random restarts).
  EXPECT_GE(reachedBound, 265u);
}

// The same input and seed give the same placement.
TEST(ArenaPackerProperty, Deterministic) {
  std::mt19937_64 random(7);
  std::vector<ArenaBuffer> buffers = makeRandomInstance(random, false);
  PackResult first = packArena(buffers), second = packArena(buffers);
  EXPECT_EQ(first.placement.offsets, second.placement.offsets);
  EXPECT_EQ(first.method, second.method);
}

} // namespace
