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
  case Ordering::Breadth:
    return "breadth";
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

/// Per buffer, the most bytes live at any point of its lifetime: a sweep over
/// the sections between consecutive begin and end events.
static std::vector<uint64_t>
computeBreadths(llvm::ArrayRef<ArenaBuffer> buffers) {
  unsigned n = buffers.size();
  std::vector<uint64_t> points;
  for (const ArenaBuffer &b : buffers) {
    points.push_back(b.begin);
    points.push_back(uint64_t(b.end) + 1);
  }
  llvm::sort(points);
  points.erase(std::unique(points.begin(), points.end()), points.end());
  auto indexOf = [&](uint64_t p) {
    return std::lower_bound(points.begin(), points.end(), p) - points.begin();
  };
  std::vector<uint64_t> live(points.size() + 1, 0);
  // Difference array of live bytes over the sections.
  std::vector<uint64_t> add(points.size() + 1, 0), sub(points.size() + 1, 0);
  for (const ArenaBuffer &b : buffers) {
    add[indexOf(b.begin)] += b.slot();
    sub[indexOf(uint64_t(b.end) + 1)] += b.slot();
  }
  uint64_t running = 0;
  for (size_t s = 0; s < points.size(); ++s) {
    running += add[s];
    running -= sub[s];
    live[s] = running;
  }
  std::vector<uint64_t> breadth(n, 0);
  for (unsigned i = 0; i < n; ++i)
    for (size_t s = indexOf(buffers[i].begin),
                e = indexOf(uint64_t(buffers[i].end) + 1);
         s < e; ++s)
      breadth[i] = std::max(breadth[i], live[s]);
  return breadth;
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
  case Ordering::Breadth: {
    std::vector<uint64_t> breadth = computeBreadths(buffers);
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return std::make_tuple(breadth[a], slot(a)) >
             std::make_tuple(breadth[b], slot(b));
    });
    break;
  }
  }
  return order;
}

namespace {

/// The instance as the placement loop wants it: slots, alignments, and for
/// each buffer the non-empty buffers live at the same time as it (the only
/// ones its offset depends on), in compressed-sparse-row form. Time-disjoint
/// buffers never interact, so a placement costs the sum of the neighbour
/// counts (times a log for sorting), not n^2.
struct Conflicts {
  std::vector<uint64_t> slot, alignment;
  std::vector<uint32_t> start, neighbours;

  explicit Conflicts(llvm::ArrayRef<ArenaBuffer> buffers) {
    unsigned n = buffers.size();
    slot.resize(n);
    alignment.resize(n);
    for (unsigned i = 0; i < n; ++i) {
      slot[i] = buffers[i].slot();
      alignment[i] = buffers[i].alignment;
    }
    // Sweep by begin: j after i overlaps i iff j begins by i's end.
    std::vector<unsigned> byBegin;
    for (unsigned i = 0; i < n; ++i)
      if (slot[i] != 0)
        byBegin.push_back(i);
    llvm::stable_sort(byBegin, [&](unsigned a, unsigned b) {
      return buffers[a].begin < buffers[b].begin;
    });
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    std::vector<uint32_t> degree(n, 0);
    for (size_t x = 0; x < byBegin.size(); ++x) {
      unsigned i = byBegin[x];
      for (size_t y = x + 1;
           y < byBegin.size() && buffers[byBegin[y]].begin <= buffers[i].end;
           ++y) {
        pairs.push_back({i, byBegin[y]});
        ++degree[i];
        ++degree[byBegin[y]];
      }
    }
    start.assign(n + 1, 0);
    for (unsigned i = 0; i < n; ++i)
      start[i + 1] = start[i] + degree[i];
    neighbours.resize(start[n]);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (auto [a, b] : pairs) {
      neighbours[fill[a]++] = b;
      neighbours[fill[b]++] = a;
    }
  }
  unsigned size() const { return slot.size(); }
};

/// A placed neighbour: its bytes [offset, end) and its index.
struct Occupied {
  uint64_t offset, end;
  uint32_t index;
};

/// Sorts by offset. The neighbour lists are kept in the offset order of the
/// previous placement, and consecutive placements of the search differ in
/// few offsets, so insertion sort is usually linear; it falls back to a
/// full sort when the input turns out far from sorted.
void sortByOffset(std::vector<Occupied> &items, uint64_t &work) {
  size_t moves = 0, limit = 8 * items.size() + 32;
  for (size_t i = 1; i < items.size(); ++i) {
    Occupied item = items[i];
    size_t j = i;
    while (j > 0 && items[j - 1].offset > item.offset) {
      items[j] = items[j - 1];
      --j;
    }
    items[j] = item;
    moves += i - j;
    if (moves > limit) {
      std::sort(items.begin(), items.end(),
                [](const Occupied &a, const Occupied &b) {
                  return a.offset < b.offset;
                });
      work += 4 * items.size();
      break;
    }
  }
  work += moves;
}

/// Best fit of one buffer against the already placed neighbours `below`,
/// sorted by offset: the smallest gap that holds the slot at an aligned
/// offset, lowest among equal gaps, else on top.
uint64_t bestFitOffset(const std::vector<Occupied> &below, uint64_t slot,
                       uint64_t alignment) {
  uint64_t cursor = 0, bestGap = UINT64_MAX, bestOffset = 0;
  bool foundGap = false;
  for (const Occupied &o : below) {
    if (o.offset > cursor) {
      uint64_t gap = o.offset - cursor;
      uint64_t candidate = llvm::alignTo(cursor, alignment);
      if (gap < bestGap && candidate + slot <= o.offset) {
        bestGap = gap;
        bestOffset = candidate;
        foundGap = true;
      }
    }
    cursor = std::max(cursor, o.end);
  }
  return foundGap ? bestOffset : llvm::alignTo(cursor, alignment);
}

struct Scratch {
  std::vector<Occupied> placed;
  std::vector<uint32_t> later;
};

/// A best-fit placement that can be redone from any position of its order:
/// buffer order[k]'s offset depends only on order[0..k), so moving a buffer
/// from `from` to an earlier `to` re-places order[to..] and keeps the rest.
struct OrderedPlacement {
  std::vector<unsigned> order, position;
  std::vector<uint64_t> offset;
  /// top[k]: the largest offset + slot among order[0..k].
  std::vector<uint64_t> top;

  uint64_t arena() const { return top.empty() ? 0 : top.back(); }

  void reset(Conflicts &c, std::vector<unsigned> newOrder, uint64_t &work,
             Scratch &scratch) {
    order = std::move(newOrder);
    position.resize(order.size());
    offset.assign(order.size(), 0);
    top.assign(order.size(), 0);
    for (unsigned k = 0; k < order.size(); ++k)
      position[order[k]] = k;
    placeFrom(c, 0, work, scratch);
  }

  void placeFrom(Conflicts &c, unsigned from, uint64_t &work,
                 Scratch &scratch) {
    uint64_t running = from == 0 ? 0 : top[from - 1];
    for (unsigned k = from; k < order.size(); ++k) {
      unsigned index = order[k];
      uint64_t slot = c.slot[index];
      if (slot != 0) {
        scratch.placed.clear();
        scratch.later.clear();
        uint32_t first = c.start[index], last = c.start[index + 1];
        for (uint32_t e = first; e < last; ++e) {
          unsigned other = c.neighbours[e];
          if (position[other] < k)
            scratch.placed.push_back(
                {offset[other], offset[other] + c.slot[other], other});
          else
            scratch.later.push_back(other);
        }
        sortByOffset(scratch.placed, work);
        work += last - first;
        // Keep the list in this order for the next placement.
        uint32_t e = first;
        for (const Occupied &o : scratch.placed)
          c.neighbours[e++] = o.index;
        for (uint32_t other : scratch.later)
          c.neighbours[e++] = other;
        offset[index] = bestFitOffset(scratch.placed, slot, c.alignment[index]);
        running = std::max(running, offset[index] + slot);
      } else {
        offset[index] = 0;
      }
      top[k] = running;
    }
  }

  /// Moves order[from] to position `to` (to < from) and re-places.
  void moveEarlier(Conflicts &c, unsigned from, unsigned to, uint64_t &work,
                   Scratch &scratch) {
    std::rotate(order.begin() + to, order.begin() + from,
                order.begin() + from + 1);
    for (unsigned k = to; k <= from; ++k)
      position[order[k]] = k;
    placeFrom(c, to, work, scratch);
  }
};

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

Placement placeBestFit(llvm::ArrayRef<ArenaBuffer> buffers,
                       llvm::ArrayRef<unsigned> order) {
  Conflicts conflicts(buffers);
  OrderedPlacement p;
  uint64_t work = 0;
  Scratch scratch;
  p.reset(conflicts, std::vector<unsigned>(order.begin(), order.end()), work,
          scratch);
  Placement placement;
  placement.offsets = std::move(p.offset);
  placement.arenaSize = p.arena();
  return placement;
}

namespace {

/// The lower-bound-directed local search on the order: each round moves a
/// buffer that reaches the arena's top (or, one round in four, any buffer
/// above the lower bound) to an earlier position, random or just before one
/// of its earlier time-neighbours, and re-places the order from there.
struct Search {
  Search(Conflicts &c, uint64_t bound, uint64_t seed)
      : c(c), bound(bound), random(seed) {}

  Conflicts &c;
  uint64_t bound;
  std::mt19937_64 random;
  /// Pairs of buffers compared so far (the budget's unit).
  uint64_t work = 0;
  unsigned rounds = 0;
  Scratch scratch;
  std::vector<unsigned> candidates;

  /// Local search from `current` until `budget` work is spent or the bound
  /// is reached; `best` keeps the smallest arena seen. Only the arena
  /// counts: moves that keep it are accepted, so the search drifts across
  /// plateaus (breaking ties by the bytes above the lower bound made it
  /// settle early and end worse).
  void run(OrderedPlacement &current, uint64_t budget, OrderedPlacement &best) {
    uint64_t currentScore = current.arena();
    OrderedPlacement candidate;
    unsigned n = c.size();
    while (work < budget && best.arena() > bound) {
      // Buffers reaching the top (most of the time) or over the bound.
      candidates.clear();
      bool fromTop = random() % 4 != 0;
      uint64_t line = fromTop ? current.arena() : bound;
      for (unsigned k = 1; k < n; ++k) {
        unsigned i = current.order[k];
        if (c.slot[i] != 0 && current.offset[i] + c.slot[i] >= line &&
            (fromTop || current.offset[i] + c.slot[i] > bound))
          candidates.push_back(k);
      }
      work += n;
      if (candidates.empty())
        break;
      unsigned from = candidates[random() % candidates.size()];
      unsigned index = current.order[from];
      unsigned to;
      if (random() % 2 == 0) {
        to = random() % from;
      } else {
        // Just before a random earlier neighbour (one it was placed
        // around), so it gets first pick of that space.
        unsigned count = 0, chosen = from;
        for (uint32_t e = c.start[index]; e < c.start[index + 1]; ++e) {
          unsigned other = c.neighbours[e];
          if (current.position[other] < from && random() % (++count) == 0)
            chosen = current.position[other];
        }
        work += c.start[index + 1] - c.start[index];
        to = chosen == from ? random() % from : chosen;
      }
      candidate = current;
      candidate.moveEarlier(c, from, to, work, scratch);
      ++rounds;
      uint64_t candidateScore = candidate.arena();
      if (candidateScore <= currentScore) {
        std::swap(current, candidate);
        currentScore = candidateScore;
        if (current.arena() < best.arena())
          best = current;
      }
    }
  }
};

} // namespace

PackResult packArena(llvm::ArrayRef<ArenaBuffer> buffers,
                     const PackOptions &options) {
  PackResult result;
  result.lowerBound = computeLowerBound(buffers);
  result.naiveSize = computeNaiveSize(buffers);
  Conflicts conflicts(buffers);
  Search search(conflicts, result.lowerBound, options.seed);

  // Greedy starts: every ordering.
  std::vector<std::pair<std::string, std::vector<unsigned>>> starts;
  for (Ordering ordering : kAllOrderings)
    starts.push_back(
        {getOrderingName(ordering).str(), makeOrder(buffers, ordering)});

  std::vector<OrderedPlacement> placed(starts.size());
  unsigned bestStart = 0;
  for (unsigned s = 0; s < starts.size(); ++s) {
    placed[s].reset(conflicts, starts[s].second, search.work, search.scratch);
    if (s == 0)
      result.greedySize = placed[s].arena();
    if (placed[s].arena() < placed[bestStart].arena())
      bestStart = s;
  }
  OrderedPlacement best = placed[bestStart];
  result.method = starts[bestStart].first;

  // Budget: what the given rounds of a quadratic placement would compare,
  // capped by the pair limit.
  uint64_t n = buffers.size();
  uint64_t budget = std::min<uint64_t>(options.searchPairLimit,
                                       uint64_t(options.localSearchRounds) *
                                           std::max<uint64_t>(1, n * n));
  uint64_t startWork = search.work;
  if (budget > 0 && best.arena() > result.lowerBound) {
    // A short search from every start, then the rest from the best.
    uint64_t share = budget / (2 * starts.size());
    std::vector<OrderedPlacement> bests = placed;
    for (unsigned s = 0; s < starts.size() && best.arena() > result.lowerBound;
         ++s) {
      search.run(placed[s], search.work + share, bests[s]);
      if (bests[s].arena() < best.arena()) {
        best = bests[s];
        result.method = "local search";
      }
    }
    unsigned s = 0;
    for (unsigned t = 1; t < starts.size(); ++t)
      if (bests[t].arena() < bests[s].arena())
        s = t;
    OrderedPlacement current = bests[s];
    uint64_t before = best.arena();
    search.run(current, startWork + budget, best);
    if (best.arena() < before)
      result.method = "local search";
  }
  result.searchRounds = search.rounds;
  result.placement.offsets = std::move(best.offset);
  result.placement.arenaSize = best.arena();
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
