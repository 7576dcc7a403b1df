//===- ArenaPacker.cpp - Static placement of buffers in one arena ---------===//

#include "vram/Arena/ArenaPacker.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <random>

namespace vram::arena {

uint64_t ArenaBuffer::slot() const { return llvm::alignTo(size, alignment); }

llvm::StringRef getOrderingName(Ordering ordering) {
  switch (ordering) {
  case Ordering::Size:
    return "size";
  case Ordering::SizeTimesLifetime:
    return "size x lifetime";
  case Ordering::Lifetime:
    return "lifetime";
  case Ordering::Begin:
    return "begin";
  }
  llvm_unreachable("unknown ordering");
}

double PackResult::ratio() const {
  return lowerBound == 0 ? 1.0
                         : static_cast<double>(placement.arenaSize) /
                               static_cast<double>(lowerBound);
}

llvm::Error validateBuffers(llvm::ArrayRef<ArenaBuffer> buffers) {
  uint64_t total = 0;
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    if (!llvm::isPowerOf2_64(buffer.alignment))
      return llvm::createStringError(
          "buffer %zu: alignment %llu is not a power of two", index,
          static_cast<unsigned long long>(buffer.alignment));
    if (buffer.begin > buffer.end)
      return llvm::createStringError("buffer %zu: live range [%u, %u] is empty",
                                     index, buffer.begin, buffer.end);
    // alignTo wraps around when the rounded size does not fit in 64 bits.
    if (buffer.size > UINT64_MAX - (buffer.alignment - 1) ||
        buffer.slot() > UINT64_MAX - total)
      return llvm::createStringError(
          "buffer %zu: the buffers' total size overflows 64 bits", index);
    total += buffer.slot();
  }
  return llvm::Error::success();
}

uint64_t computeLowerBound(llvm::ArrayRef<ArenaBuffer> buffers) {
  // Sweep over begin/end events; points are sparse, so sort events rather
  // than index an array by point. 64-bit points make end + 1 safe.
  std::vector<std::pair<uint64_t, int64_t>> events;
  events.reserve(2 * buffers.size());
  for (const ArenaBuffer &buffer : buffers) {
    if (buffer.slot() == 0)
      continue;
    events.push_back({buffer.begin, 1});
    events.push_back({uint64_t(buffer.end) + 1, -1});
  }
  // The sign only orders events; the bytes come from a parallel lookup.
  std::vector<unsigned> eventOrder(events.size());
  for (unsigned i = 0; i < eventOrder.size(); ++i)
    eventOrder[i] = i;
  llvm::sort(eventOrder, [&](unsigned a, unsigned b) {
    return events[a].first < events[b].first;
  });
  std::vector<uint64_t> eventBytes;
  eventBytes.reserve(events.size());
  for (const ArenaBuffer &buffer : buffers)
    if (buffer.slot() != 0) {
      eventBytes.push_back(buffer.slot());
      eventBytes.push_back(buffer.slot());
    }
  uint64_t live = 0, peak = 0;
  for (size_t i = 0; i < eventOrder.size();) {
    uint64_t point = events[eventOrder[i]].first;
    // Apply every event of this point before measuring: a buffer ending at
    // point - 1 and one beginning at point never coexist.
    for (; i < eventOrder.size() && events[eventOrder[i]].first == point; ++i) {
      unsigned e = eventOrder[i];
      if (events[e].second > 0)
        live += eventBytes[e];
      else
        live -= eventBytes[e];
    }
    peak = std::max(peak, live);
  }
  return peak;
}

uint64_t computeNaiveSize(llvm::ArrayRef<ArenaBuffer> buffers) {
  uint64_t total = 0;
  for (const ArenaBuffer &buffer : buffers)
    total += buffer.slot();
  return total;
}

std::vector<unsigned> makeOrder(llvm::ArrayRef<ArenaBuffer> buffers,
                                Ordering ordering) {
  std::vector<unsigned> order(buffers.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  auto lifetime = [&](unsigned i) {
    return uint64_t(buffers[i].end) - buffers[i].begin + 1;
  };
  auto slot = [&](unsigned i) { return buffers[i].slot(); };
  // Each key is a tuple compared lexicographically; the index breaks ties.
  switch (ordering) {
  case Ordering::Size:
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return std::make_tuple(slot(a), lifetime(a)) >
             std::make_tuple(slot(b), lifetime(b));
    });
    break;
  case Ordering::SizeTimesLifetime:
    // A double product cannot overflow; its rounding only affects ties
    // between near-equal areas.
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return std::make_tuple(double(slot(a)) * double(lifetime(a)), slot(a)) >
             std::make_tuple(double(slot(b)) * double(lifetime(b)), slot(b));
    });
    break;
  case Ordering::Lifetime:
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return std::make_tuple(lifetime(a), slot(a)) >
             std::make_tuple(lifetime(b), slot(b));
    });
    break;
  case Ordering::Begin:
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      if (buffers[a].begin != buffers[b].begin)
        return buffers[a].begin < buffers[b].begin;
      return slot(a) > slot(b);
    });
    break;
  }
  return order;
}

Placement placeBestFit(llvm::ArrayRef<ArenaBuffer> buffers,
                       llvm::ArrayRef<unsigned> order) {
  Placement placement;
  placement.offsets.assign(buffers.size(), 0);
  // Placed buffers sorted by offset, so the gaps among those overlapping in
  // time come out of one scan without sorting per buffer.
  std::vector<unsigned> byOffset;
  byOffset.reserve(buffers.size());
  for (unsigned index : order) {
    const ArenaBuffer &buffer = buffers[index];
    uint64_t slot = buffer.slot();
    // An empty buffer occupies no byte; offset 0 is as good as any.
    if (slot == 0)
      continue;
    uint64_t cursor = 0, bestGap = UINT64_MAX, bestOffset = 0;
    bool foundGap = false;
    for (unsigned other : byOffset) {
      if (!buffer.overlapsInTime(buffers[other]))
        continue;
      uint64_t otherOffset = placement.offsets[other];
      if (otherOffset > cursor) {
        uint64_t gap = otherOffset - cursor;
        uint64_t candidate = llvm::alignTo(cursor, buffer.alignment);
        if (gap < bestGap && candidate + slot <= otherOffset) {
          bestGap = gap;
          bestOffset = candidate;
          foundGap = true;
        }
      }
      cursor = std::max(cursor, otherOffset + buffers[other].slot());
    }
    uint64_t offset =
        foundGap ? bestOffset : llvm::alignTo(cursor, buffer.alignment);
    placement.offsets[index] = offset;
    placement.arenaSize = std::max(placement.arenaSize, offset + slot);
    auto position = llvm::upper_bound(byOffset, offset, [&](uint64_t value,
                                                            unsigned other) {
      return value < placement.offsets[other];
    });
    byOffset.insert(position, index);
  }
  return placement;
}

namespace {

/// Lower-bound-directed local search from `order` for `rounds` rounds: the
/// buffers that reach the arena's top are what makes it larger than the
/// bound, so each round moves one of them to a random earlier position in
/// the order, where it is placed before buffers it was blocked by. Moves that
/// do not grow the arena are kept, so the search can cross plateaus; it
/// stops early after `stallLimit` rounds without a smaller arena (0: never).
void searchFrom(llvm::ArrayRef<ArenaBuffer> buffers,
                std::vector<unsigned> order,
                unsigned rounds, unsigned stallLimit, std::mt19937_64 &random,
                llvm::StringRef method, PackResult &result) {
  Placement current = placeBestFit(buffers, order);
  std::vector<unsigned> candidateOrder;
  unsigned stalled = 0;
  for (unsigned round = 0;
       round < rounds && result.placement.arenaSize > result.lowerBound &&
       (stallLimit == 0 || stalled < stallLimit);
       ++round) {
    std::vector<unsigned> topPositions;
    for (auto [position, index] : llvm::enumerate(order))
      if (buffers[index].slot() != 0 &&
          current.offsets[index] + buffers[index].slot() == current.arenaSize)
        topPositions.push_back(position);
    candidateOrder = order;
    unsigned from = topPositions[random() % topPositions.size()];
    if (from == 0) {
      // Already first: perturb elsewhere instead, by swapping a random pair
      // of neighbours.
      if (order.size() < 2)
        break;
      unsigned at = random() % (order.size() - 1);
      std::swap(candidateOrder[at], candidateOrder[at + 1]);
    } else {
      unsigned to = random() % from;
      std::rotate(candidateOrder.begin() + to, candidateOrder.begin() + from,
                  candidateOrder.begin() + from + 1);
    }
    Placement candidate = placeBestFit(buffers, candidateOrder);
    ++result.searchRounds;
    if (candidate.arenaSize > current.arenaSize) {
      ++stalled;
      continue;
    }
    stalled = candidate.arenaSize < current.arenaSize ? 0 : stalled + 1;
    order.swap(candidateOrder);
    current = std::move(candidate);
    if (current.arenaSize < result.placement.arenaSize) {
      result.placement = current;
      result.method = method.str();
    }
  }
}

/// The search budget twice: once from the best greedy order, then in short
/// restarts from random orders, for instances whose greedy neighbourhood
/// has no path down to the bound (small_cnn's training step: 1.055x the
/// bound from the greedy start, 1.0x from others).
void improveByLocalSearch(llvm::ArrayRef<ArenaBuffer> buffers,
                          std::vector<unsigned> order, PackResult &result,
                          const PackOptions &options) {
  constexpr unsigned kRestartStallRounds = 10;
  uint64_t pairsPerRound =
      std::max<uint64_t>(1, uint64_t(buffers.size()) * buffers.size());
  unsigned rounds = static_cast<unsigned>(std::min<uint64_t>(
      options.localSearchRounds, options.searchPairLimit / pairsPerRound / 2));
  std::mt19937_64 random(options.seed);
  searchFrom(buffers, order, rounds, /*stallLimit=*/0, random, "local search",
             result);
  unsigned spent = result.searchRounds;
  while (result.searchRounds < spent + rounds &&
         result.placement.arenaSize > result.lowerBound) {
    std::shuffle(order.begin(), order.end(), random);
    unsigned before = result.searchRounds;
    searchFrom(buffers, order, spent + rounds - result.searchRounds,
               kRestartStallRounds, random, "local search (restarted)", result);
    if (result.searchRounds == before)
      break;
  }
}

/// Every buffer after the previous one, largest alignment first: slots are
/// multiples of their alignment, so no padding is ever needed.
Placement placeWithoutReuse(llvm::ArrayRef<ArenaBuffer> buffers) {
  std::vector<unsigned> order(buffers.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return buffers[a].alignment > buffers[b].alignment;
  });
  Placement placement;
  placement.offsets.assign(buffers.size(), 0);
  for (unsigned index : order) {
    placement.offsets[index] = placement.arenaSize;
    placement.arenaSize += buffers[index].slot();
  }
  return placement;
}

} // namespace

PackResult packArena(llvm::ArrayRef<ArenaBuffer> buffers,
                     const PackOptions &options) {
  PackResult result;
  result.lowerBound = computeLowerBound(buffers);
  result.naiveSize = computeNaiveSize(buffers);
  std::vector<unsigned> bestOrder;
  for (Ordering ordering : kAllOrderings) {
    std::vector<unsigned> order = makeOrder(buffers, ordering);
    Placement placement = placeBestFit(buffers, order);
    if (ordering == Ordering::Size)
      result.greedySize = placement.arenaSize;
    if (bestOrder.empty() ||
        placement.arenaSize < result.placement.arenaSize) {
      result.placement = std::move(placement);
      result.method = getOrderingName(ordering).str();
      bestOrder = std::move(order);
    }
    if (result.placement.arenaSize == result.lowerBound)
      break;
  }
  improveByLocalSearch(buffers, std::move(bestOrder), result, options);
  // Mixed alignments can make best fit pad more than reuse saves.
  if (result.placement.arenaSize > result.naiveSize) {
    result.placement = placeWithoutReuse(buffers);
    result.method = "no reuse";
  }
  return result;
}

llvm::Error verifyPlacement(llvm::ArrayRef<ArenaBuffer> buffers,
                            const Placement &placement) {
  if (placement.offsets.size() != buffers.size())
    return llvm::createStringError("%zu offsets for %zu buffers",
                                   placement.offsets.size(), buffers.size());
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    uint64_t offset = placement.offsets[index];
    if (offset % buffer.alignment != 0)
      return llvm::createStringError(
          "buffer %zu: offset %llu is not a multiple of its alignment %llu",
          index, static_cast<unsigned long long>(offset),
          static_cast<unsigned long long>(buffer.alignment));
    if (buffer.slot() != 0 && offset + buffer.slot() > placement.arenaSize)
      return llvm::createStringError(
          "buffer %zu: [%llu, %llu) ends past the arena's %llu bytes", index,
          static_cast<unsigned long long>(offset),
          static_cast<unsigned long long>(offset + buffer.slot()),
          static_cast<unsigned long long>(placement.arenaSize));
  }
  // Sorting by offset bounds the pairs to compare: once a buffer starts past
  // another's end, so do all later ones.
  std::vector<unsigned> byOffset;
  for (unsigned i = 0; i < buffers.size(); ++i)
    if (buffers[i].slot() != 0)
      byOffset.push_back(i);
  llvm::sort(byOffset, [&](unsigned a, unsigned b) {
    return placement.offsets[a] < placement.offsets[b];
  });
  for (size_t i = 0; i < byOffset.size(); ++i) {
    unsigned a = byOffset[i];
    uint64_t endA = placement.offsets[a] + buffers[a].slot();
    for (size_t j = i + 1;
         j < byOffset.size() && placement.offsets[byOffset[j]] < endA; ++j) {
      unsigned b = byOffset[j];
      if (buffers[a].overlapsInTime(buffers[b]))
        return llvm::createStringError(
            "buffers %u and %u overlap: both live at points [%u, %u] and "
            "both use bytes [%llu, %llu)",
            a, b, std::max(buffers[a].begin, buffers[b].begin),
            std::min(buffers[a].end, buffers[b].end),
            static_cast<unsigned long long>(placement.offsets[b]),
            static_cast<unsigned long long>(
                std::min(endA, placement.offsets[b] + buffers[b].slot())));
    }
  }
  return llvm::Error::success();
}

} // namespace vram::arena
