//===- KeptBlocks.cpp - large blocks kept from call to call ---------------===//

#include "vram/Runner/KeptBlocks.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

namespace {
struct KeptBlocks {
  std::mutex mutex;
  /// Large blocks handed out and not yet freed, with their sizes.
  std::unordered_map<void *, size_t> lent;
  /// Large blocks freed, by size.
  std::multimap<size_t, void *> kept;
};

KeptBlocks &getKeptBlocks() {
  static KeptBlocks blocks;
  return blocks;
}
} // namespace

void *vram::allocateKeptBlock(size_t size) {
  if (size < kMinKeptBlockBytes)
    return std::malloc(size);
  KeptBlocks &blocks = getKeptBlocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  void *pointer;
  if (auto found = blocks.kept.find(size); found != blocks.kept.end()) {
    pointer = found->second;
    blocks.kept.erase(found);
  } else if (!(pointer = std::malloc(size))) {
    return nullptr;
  }
  blocks.lent[pointer] = size;
  return pointer;
}

void vram::freeKeptBlock(void *pointer) {
  if (!pointer)
    return;
  KeptBlocks &blocks = getKeptBlocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  auto found = blocks.lent.find(pointer);
  if (found == blocks.lent.end()) {
    std::free(pointer);
    return;
  }
  blocks.kept.emplace(found->second, pointer);
  blocks.lent.erase(found);
}

void vram::releaseKeptBlocks() {
  KeptBlocks &blocks = getKeptBlocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  for (auto &[size, pointer] : blocks.kept)
    std::free(pointer);
  blocks.kept.clear();
}
