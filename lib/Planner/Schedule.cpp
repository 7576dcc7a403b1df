//===- Schedule.cpp - List scheduling for memory --------------------------===//

#include "vram/Planner/Schedule.h"
#include "vram/Planner/Planners.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <set>

using namespace vram::planner;

namespace {
/// Which ready op a list schedule runs next.
enum class Pick {
  /// The one that grows live bytes least.
  LeastGrowth,
  /// One that starts a chain shrinking live bytes, the most first; then one
  /// that leaves them as they are; otherwise the first in the given order.
  ShrinkingFirst,
};

/// A list schedule in progress: which ops are ready and which buffers are
/// still to be read.
class ListScheduler {
public:
  explicit ListScheduler(const OrderingProblem &problem);
  std::vector<unsigned> run(Pick pick);

private:
  /// Bytes live after `op` runs minus before: what it allocates, less what
  /// it reads for the last time.
  int64_t growth(unsigned op) const;
  /// The lowest growth reached by running `op` and then, while there is
  /// one, the op that only waits for the one before (a cast of a gradient,
  /// then its optimizer update), a few ops deep.
  int64_t chainGrowth(unsigned op);
  /// ShrinkingFirst's rank of a ready op, lowest first: a chain that shrinks
  /// live bytes by its growth; then an op that depends on no other and
  /// leaves them as they are (Adam's step count, which every update reads);
  /// then the rest alike, in the given order.
  int64_t shrinkingKey(unsigned op);
  void markRun(unsigned op);

  const OrderingProblem &problem;
  std::vector<unsigned> pendingReaders;
  std::vector<unsigned> waitingFor;
  std::vector<llvm::SmallVector<unsigned, 2>> successors;
  std::set<unsigned> ready;
};
} // namespace

/// Per op, the ops that wait for it.
static std::vector<llvm::SmallVector<unsigned, 2>>
getSuccessors(const OrderingProblem &problem) {
  std::vector<llvm::SmallVector<unsigned, 2>> successors(
      problem.predecessors.size());
  for (auto [op, predecessors] : llvm::enumerate(problem.predecessors))
    for (unsigned predecessor : predecessors)
      successors[predecessor].push_back(op);
  return successors;
}

ListScheduler::ListScheduler(const OrderingProblem &problem)
    : problem(problem), pendingReaders(problem.bufferBytes.size(), 0),
      waitingFor(problem.predecessors.size()),
      successors(getSuccessors(problem)) {
  for (const auto &reads : problem.reads)
    for (unsigned buffer : reads)
      ++pendingReaders[buffer];
  for (auto [op, predecessors] : llvm::enumerate(problem.predecessors))
    waitingFor[op] = predecessors.size();
  for (unsigned op = 0; op < waitingFor.size(); ++op)
    if (waitingFor[op] == 0)
      ready.insert(op);
}

int64_t ListScheduler::growth(unsigned op) const {
  int64_t growth = problem.allocatedBytes[op];
  for (unsigned buffer : problem.reads[op])
    if (pendingReaders[buffer] == 1 && problem.freedAfterLastRead[buffer])
      growth -= problem.bufferBytes[buffer];
  return growth;
}

int64_t ListScheduler::chainGrowth(unsigned op) {
  constexpr unsigned kMaxChain = 4;
  int64_t total = 0, lowest = INT64_MAX;
  llvm::SmallVector<unsigned, kMaxChain> chain;
  for (unsigned depth = 0; depth < kMaxChain; ++depth) {
    total += growth(op);
    lowest = std::min(lowest, total);
    chain.push_back(op);
    for (unsigned buffer : problem.reads[op])
      --pendingReaders[buffer];
    if (successors[op].size() != 1 || waitingFor[successors[op][0]] != 1)
      break;
    op = successors[op][0];
  }
  for (unsigned run : chain)
    for (unsigned buffer : problem.reads[run])
      ++pendingReaders[buffer];
  return lowest;
}

int64_t ListScheduler::shrinkingKey(unsigned op) {
  if (int64_t chain = chainGrowth(op); chain < 0)
    return chain;
  return problem.predecessors[op].empty() && growth(op) == 0 ? 0 : 1;
}

void ListScheduler::markRun(unsigned op) {
  ready.erase(op);
  for (unsigned buffer : problem.reads[op])
    --pendingReaders[buffer];
  for (unsigned successor : successors[op])
    if (--waitingFor[successor] == 0)
      ready.insert(successor);
}

std::vector<unsigned> ListScheduler::run(Pick pick) {
  std::vector<unsigned> order;
  order.reserve(waitingFor.size());
  while (!ready.empty()) {
    std::optional<unsigned> best;
    int64_t bestKey = 0;
    for (unsigned op : ready) {
      int64_t key = pick == Pick::LeastGrowth ? growth(op) : shrinkingKey(op);
      if (!best || key < bestKey) {
        best = op;
        bestKey = key;
      }
    }
    order.push_back(*best);
    markRun(*best);
  }
  return order;
}

namespace {
/// Local search on a topological order for a lower peak of live bytes (in
/// the list schedules' accounting: allocations less the buffers freed after
/// their last read). A move takes one op to another place between its last
/// predecessor and its first successor and is kept when the peak does not
/// grow and neither does the sum of live bytes over the schedule, which
/// lets the search cross the peak's plateaus. Live bytes change only from
/// the op's old place to its new one (before it the same ops have run,
/// after it the same buffers are freed), so a move is weighed there only.
class OrderRefiner {
public:
  OrderRefiner(const OrderingProblem &problem, std::vector<unsigned> order);
  /// Random moves, from a fixed seed, until `work` (ops and reads walked)
  /// is spent or 256 tries per op have not lowered the peak or the sum.
  void refine(uint64_t work);
  int64_t peak() const { return prefixPeak.back(); }
  std::vector<unsigned> takeOrder() { return std::move(order); }

private:
  /// Live bytes while each op of `window` runs, `window` being the ops at
  /// places [lo, lo + window.size()) in a new order and `liveBefore` the
  /// live bytes before place `lo`, into `windowDuring`; per buffer whose
  /// readers all run by the window's end, the place of its last reader in
  /// the new order into `lastReadIn` (stamped). Returns the ops and reads
  /// walked.
  uint64_t weigh(unsigned lo, int64_t liveBefore,
                 llvm::ArrayRef<unsigned> window,
                 std::vector<int64_t> &windowDuring);
  void recomputePeaks(unsigned lo, unsigned hi);

  const OrderingProblem &problem;
  std::vector<unsigned> order, place;
  std::vector<llvm::SmallVector<unsigned, 2>> successors;
  /// Per place: live bytes while its op runs.
  std::vector<int64_t> during;
  /// Per place: the highest of `during` up to it, and from it on.
  std::vector<int64_t> prefixPeak, suffixPeak;
  int64_t total = 0;
  /// Per buffer: the place of its last reader.
  std::vector<unsigned> lastRead;
  /// weigh's scratch: per buffer, the stamp of the weighing that saw it
  /// last and the place of its last reader there; per window op, the bytes
  /// it frees (kept to save an allocation per move).
  std::vector<unsigned> seen, lastReadIn;
  unsigned stamp = 0;
  std::vector<int64_t> freed;
};
} // namespace

OrderRefiner::OrderRefiner(const OrderingProblem &problem,
                           std::vector<unsigned> initial)
    : problem(problem), order(std::move(initial)), place(order.size()),
      successors(getSuccessors(problem)), during(order.size()),
      prefixPeak(order.size()), suffixPeak(order.size()),
      lastRead(problem.bufferBytes.size(), 0),
      seen(problem.bufferBytes.size(), 0),
      lastReadIn(problem.bufferBytes.size(), 0) {
  for (auto [p, op] : llvm::enumerate(order))
    place[op] = p;
  for (auto [p, op] : llvm::enumerate(order))
    for (unsigned buffer : problem.reads[op])
      lastRead[buffer] = std::max<unsigned>(lastRead[buffer], p);
  // The whole order as one window: every buffer's last reader is in it.
  weigh(0, 0, order, during);
  for (int64_t live : during)
    total += live;
  if (!order.empty())
    recomputePeaks(0, order.size() - 1);
}

uint64_t OrderRefiner::weigh(unsigned lo, int64_t liveBefore,
                             llvm::ArrayRef<unsigned> window,
                             std::vector<int64_t> &windowDuring) {
  unsigned hi = lo + window.size() - 1;
  ++stamp;
  freed.assign(window.size(), 0);
  uint64_t reads = 0;
  // Backwards: the first window op met that reads a buffer whose readers
  // all lie in or before the window reads it last.
  for (size_t k = window.size(); k-- > 0;)
    for (unsigned buffer : problem.reads[window[k]]) {
      ++reads;
      if (seen[buffer] == stamp || lastRead[buffer] > hi)
        continue;
      seen[buffer] = stamp;
      lastReadIn[buffer] = lo + k;
      if (problem.freedAfterLastRead[buffer])
        freed[k] += problem.bufferBytes[buffer];
    }
  windowDuring.resize(window.size());
  int64_t live = liveBefore;
  for (auto [k, op] : llvm::enumerate(window)) {
    windowDuring[k] = live + int64_t(problem.allocatedBytes[op]);
    live = windowDuring[k] - freed[k];
  }
  return reads + window.size();
}

void OrderRefiner::recomputePeaks(unsigned lo, unsigned hi) {
  size_t n = order.size();
  for (size_t p = lo; p < n; ++p)
    prefixPeak[p] = std::max(p ? prefixPeak[p - 1] : INT64_MIN, during[p]);
  for (size_t p = hi + 1; p-- > 0;)
    suffixPeak[p] =
        std::max(p + 1 < n ? suffixPeak[p + 1] : INT64_MIN, during[p]);
}

void OrderRefiner::refine(uint64_t work) {
  size_t n = order.size();
  if (n < 2)
    return;
  // splitmix64: the same moves on every platform.
  uint64_t state = 0;
  auto random = [&](uint64_t bound) {
    uint64_t z = (state += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return (z ^ (z >> 31)) % bound;
  };
  // Gaps between improvements were under 120 tries per op on the random
  // layered graphs of 100-1,000 ops.
  const uint64_t patience = 256 * n;
  std::vector<unsigned> window;
  std::vector<int64_t> windowDuring;
  uint64_t spent = 0, tries = 0, lastImprovement = 0;
  while (spent < work && tries - lastImprovement < patience) {
    ++tries;
    unsigned from = random(n), op = order[from];
    unsigned first = 0, last = n - 1;
    for (unsigned predecessor : problem.predecessors[op])
      first = std::max(first, place[predecessor] + 1);
    for (unsigned successor : successors[op])
      last = std::min(last, place[successor] - 1);
    spent += 1 + problem.predecessors[op].size() + successors[op].size();
    unsigned to = first + random(last - first + 1);
    if (to == from)
      continue;
    unsigned lo = std::min(from, to), hi = std::max(from, to);
    window.clear();
    if (from < to) {
      window.insert(window.end(), order.begin() + from + 1,
                    order.begin() + to + 1);
      window.push_back(op);
    } else {
      window.push_back(op);
      window.insert(window.end(), order.begin() + to, order.begin() + from);
    }
    // What runs before place lo is the same in both orders.
    int64_t liveBefore =
        during[lo] - int64_t(problem.allocatedBytes[order[lo]]);
    spent += weigh(lo, liveBefore, window, windowDuring);
    int64_t newPeak = *llvm::max_element(windowDuring);
    if (lo > 0)
      newPeak = std::max(newPeak, prefixPeak[lo - 1]);
    if (hi + 1 < n)
      newPeak = std::max(newPeak, suffixPeak[hi + 1]);
    int64_t newTotal = total;
    for (unsigned p = lo; p <= hi; ++p)
      newTotal += windowDuring[p - lo] - during[p];
    if (newPeak > peak() || (newPeak == peak() && newTotal > total))
      continue;
    if (newPeak < peak() || newTotal < total)
      lastImprovement = tries;
    bool profileChanged = !std::equal(windowDuring.begin(), windowDuring.end(),
                                      during.begin() + lo);
    for (auto [k, moved] : llvm::enumerate(window)) {
      unsigned p = lo + k;
      order[p] = moved;
      place[moved] = p;
      during[p] = windowDuring[k];
      for (unsigned buffer : problem.reads[moved])
        if (seen[buffer] == stamp)
          lastRead[buffer] = lastReadIn[buffer];
    }
    total = newTotal;
    if (profileChanged) {
      recomputePeaks(lo, hi);
      spent += n;
    }
  }
}

std::vector<std::vector<unsigned>>
vram::planner::ordersForMemory(const OrderingProblem &problem) {
  std::vector<std::vector<unsigned>> orders;
  for (Pick pick : {Pick::ShrinkingFirst, Pick::LeastGrowth}) {
    std::vector<unsigned> order = ListScheduler(problem).run(pick);
    if (!llvm::is_contained(orders, order))
      orders.push_back(std::move(order));
  }
  // With fewer than two ops there is no other order.
  if (problem.predecessors.size() < 2)
    return orders;
  // The list schedules choose one op at a time and cannot take a choice
  // back; moving ops afterwards lowers the peak of the lowest of them and
  // the given order further (random layered graphs of 250 ops: from 92% of
  // the given order's peak to 83%).
  std::vector<unsigned> given(problem.predecessors.size());
  for (unsigned op = 0; op < given.size(); ++op)
    given[op] = op;
  std::optional<OrderRefiner> lowest;
  auto consider = [&](const std::vector<unsigned> &start) {
    OrderRefiner refiner(problem, start);
    if (!lowest || refiner.peak() < lowest->peak())
      lowest.emplace(std::move(refiner));
  };
  consider(given);
  for (const std::vector<unsigned> &order : orders)
    consider(order);
  int64_t startPeak = lowest->peak();
  // Ops and reads walked: about 50 ms on 1,000 ops here.
  constexpr uint64_t kRefineWork = uint64_t(1) << 24;
  lowest->refine(kRefineWork);
  if (lowest->peak() < startPeak) {
    std::vector<unsigned> refined = lowest->takeOrder();
    if (!llvm::is_contained(orders, refined))
      orders.push_back(std::move(refined));
  }
  return orders;
}

std::vector<std::vector<OpId>>
vram::planner::ordersForMemory(const PlanningGraph &graph) {
  OrderingProblem problem(graph.numOps());
  // A tensor made in an input's storage is that input's buffer: reading it
  // keeps the storage live. As in the unplanned schedule, every buffer but
  // those of persistent tensors and outputs is freed after its last read.
  std::vector<TensorId> storage(graph.numTensors());
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    storage[t] =
        tensor.reusesStorageOf ? storage[*tensor.reusesStorageOf] : TensorId(t);
    problem.bufferBytes.push_back(tensor.bytes);
    problem.freedAfterLastRead.push_back(true);
  }
  for (TensorId t = 0; t < graph.numTensors(); ++t)
    if (graph.mustStayResident(t))
      problem.freedAfterLastRead[storage[t]] = false;
  for (auto [id, op] : llvm::enumerate(graph.ops())) {
    for (TensorId input : op.inputs) {
      problem.addRead(id, storage[input]);
      if (std::optional<OpId> producer = graph.tensor(input).producer)
        problem.addPredecessor(id, *producer);
    }
    for (TensorId output : op.outputs) {
      if (!graph.tensor(output).reusesStorageOf)
        problem.allocatedBytes[id] += graph.tensor(output).bytes;
      // Nothing reads it: freed once its producer has run.
      if (graph.tensor(output).consumers.empty())
        problem.addRead(id, storage[output]);
    }
    // In-place writes order the readers of the tensor around the writer as
    // the schedule has them.
    for (TensorId written : op.writes)
      for (OpId reader : graph.tensor(written).consumers) {
        if (reader < id)
          problem.addPredecessor(id, reader);
        else
          problem.addPredecessor(reader, id);
      }
  }
  return ordersForMemory(problem);
}

std::vector<OpId> vram::planner::orderForMemory(const PlanningGraph &graph) {
  // The given order competes: a list schedule's one-step choices can cost
  // more than they save.
  std::vector<OpId> best(graph.numOps());
  for (OpId op = 0; op < graph.numOps(); ++op)
    best[op] = op;
  uint64_t bestPeak = unplannedPeak(graph);
  for (std::vector<unsigned> &order : ordersForMemory(graph))
    if (uint64_t peak = unplannedPeak(reorderGraph(graph, order));
        peak < bestPeak) {
      best = std::move(order);
      bestPeak = peak;
    }
  return best;
}

PlanningGraph vram::planner::reorderGraph(const PlanningGraph &graph,
                                          llvm::ArrayRef<OpId> order) {
  std::vector<OpId> newId(graph.numOps());
  PlanningGraph result;
  for (OpId old : order) {
    const PlanOp &op = graph.op(old);
    newId[old] = result.addOp(op.name, op.cost, op.isBackward);
  }
  for (const PlanTensor &tensor : graph.tensors()) {
    std::optional<OpId> producer;
    if (tensor.producer)
      producer = newId[*tensor.producer];
    result.addTensor(tensor.name, tensor.bytes, tensor.category, producer,
                     tensor.recomputable, tensor.offloadable);
  }
  // Uses and writes in the new order: addWrite needs every earlier reader
  // added before it.
  for (OpId old : order) {
    const PlanOp &op = graph.op(old);
    for (TensorId input : op.inputs) {
      if (llvm::is_contained(op.writes, input))
        result.addWrite(newId[old], input);
      else
        result.addUse(newId[old], input);
    }
  }
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    if (tensor.reusesStorageOf)
      result.setReusesStorageOf(t, *tensor.reusesStorageOf);
  return result;
}
