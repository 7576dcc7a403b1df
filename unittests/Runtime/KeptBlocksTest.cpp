//===- KeptBlocksTest.cpp - the compiled code's allocator -----------------===//

#include "vram/Runner/KeptBlocks.h"

#include "gtest/gtest.h"

using namespace vram;

namespace {

TEST(KeptBlocksTest, LargeBlockComesBackForTheSameSize) {
  size_t size = 3 * kMinKeptBlockBytes + 64;
  void *first = allocateKeptBlock(size);
  ASSERT_NE(first, nullptr);
  freeKeptBlock(first);
  // Another size does not take it; the same size does.
  void *other = allocateKeptBlock(size + 64);
  EXPECT_NE(other, first);
  void *again = allocateKeptBlock(size);
  EXPECT_EQ(again, first);
  freeKeptBlock(other);
  freeKeptBlock(again);
  releaseKeptBlocks();
}

TEST(KeptBlocksTest, TwoLiveBlocksOfOneSizeAreDistinct) {
  size_t size = kMinKeptBlockBytes;
  void *a = allocateKeptBlock(size), *b = allocateKeptBlock(size);
  EXPECT_NE(a, b);
  freeKeptBlock(a);
  freeKeptBlock(b);
  void *c = allocateKeptBlock(size), *d = allocateKeptBlock(size);
  EXPECT_TRUE((c == a && d == b) || (c == b && d == a));
  freeKeptBlock(c);
  freeKeptBlock(d);
  releaseKeptBlocks();
}

TEST(KeptBlocksTest, SmallBlocksAndNullGoToTheCLibrary) {
  // A small block freed here goes back to malloc's heap (ASan would report
  // a leak or a double free otherwise); free(nullptr) does nothing.
  void *small = allocateKeptBlock(64);
  ASSERT_NE(small, nullptr);
  freeKeptBlock(small);
  freeKeptBlock(nullptr);
}

} // namespace
