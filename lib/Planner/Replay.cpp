//===- Replay.cpp - schedule replay with eviction
//--------------------------===//
//
// One engine serves the baselines and the fast planner. It walks the schedule
// op by op, keeping track of which tensors are resident. Before an op runs,
// any missing input is rebuilt: prefetched if it has a host copy, otherwise
// recomputed together with whatever missing ancestors that needs, in
// schedule order. A tensor leaves the device when it is no longer needed,
// when a baseline's policy drops it, or when the budget would be exceeded and
// it is chosen for eviction.
//
//===----------------------------------------------------------------------===//

#include "Replay.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

using namespace vram::planner;

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();

class Replayer {
public:
  Replayer(const PlanningGraph &graph, const MachineModel &device,
           ReplayOptions options);

  /// The step program, or a plain error when the budget cannot be met.
  llvm::Expected<std::vector<PlanStep>> run();

private:
  struct Candidate {
    double score;
    TensorId tensor;
    uint32_t version;
    bool operator>(const Candidate &other) const { return score > other.score; }
  };

  bool onHost(TensorId t) const {
    return !options.startOnHost.empty() && options.startOnHost[t];
  }
  /// Tensors that stay on the device from their first step to the end.
  bool pinned(TensorId t) const { return pinnedTensors[t]; }
  bool hasFutureUse(TensorId t) const {
    return nextUse[t] < graph.tensor(t).consumers.size();
  }
  OpId nextUseOf(TensorId t) const {
    return graph.tensor(t).consumers[nextUse[t]];
  }
  double timeUntil(OpId op) const {
    return prefixTime[op] - prefixTime[cursor];
  }

  double recomputeCost(TensorId t) const;
  double offloadCost(TensorId t) const;
  bool isEvictable(TensorId t) const;
  double score(TensorId t) const;
  void pushCandidate(TensorId t);
  std::optional<TensorId> popVictim();
  void evict(TensorId t);
  /// Issues the copy of `t` to host right after its last touch.
  void copyOut(TensorId t);
  /// Brings an offloaded `t` back before its next use.
  void schedulePrefetch(TensorId t);
  bool reserve(uint64_t bytes);

  void setResident(TensorId t);
  void emitFree(TensorId t);
  void releaseIfDead(TensorId t);
  void afterUse(TensorId t);
  llvm::Error runOp(OpId op, bool isOriginal);
  llvm::Error prefetch(TensorId t);
  llvm::Error makeResident(TensorId t);
  llvm::Error budgetError() const;

  const PlanningGraph &graph;
  const MachineModel &device;
  ReplayOptions options;

  /// prefixTime[i]: compute time of ops [0, i) of the schedule.
  std::vector<double> prefixTime;
  /// What recomputeCost's walk reads, the hottest loop of the planner, in
  /// arrays of their own rather than in the graph's tensors and ops: each
  /// op's compute time, each tensor's producer (kNotRecomputable when
  /// canRecompute is false), and whether it is pinned; and its worklist,
  /// kept between calls so that no call allocates.
  static constexpr OpId kNotRecomputable = std::numeric_limits<OpId>::max();
  std::vector<double> opTime;
  std::vector<OpId> rebuiltBy;
  std::vector<bool> pinnedTensors;
  mutable std::vector<TensorId> costWorklist;
  /// Breaks ties between equally timed gaps in favour of longer ones.
  double tieBreakPerOp;
  std::vector<int64_t> keepUntil;
  /// Tensors whose keepUntil is later than their last use, by that op.
  std::vector<llvm::SmallVector<TensorId, 1>> expiringAfter;

  OpId cursor = 0;
  double clock = 0, d2hFree = 0;
  uint64_t residentBytes = 0;
  std::vector<bool> resident, hostCopy;
  /// The tensor's latest eviction was an offload: rebuild it by prefetch.
  std::vector<bool> offloaded;
  /// Prefetched and not read since.
  std::vector<bool> prefetchedUnread;
  std::vector<unsigned> nextUse, locks;
  std::vector<uint32_t> version;
  /// Step index of the last Compute or Prefetch that touched each tensor,
  /// -1 before the first step; an offload is issued right after it.
  std::vector<int64_t> lastTouchStep;
  std::vector<double> lastTouchTime;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  std::vector<llvm::SmallVector<TensorId, 1>> prefetchBefore;
  /// Set while the inputs of the op at the cursor are rebuilt.
  bool rebuilding = false;
  /// Dead tensors kept until the op at the cursor has run.
  std::vector<bool> held;
  std::vector<TensorId> heldList;
  /// Scratch marks for recomputeCost's walk, compared against costStamp.
  mutable std::vector<uint32_t> opStamp;
  mutable uint32_t costStamp = 0;

  std::vector<PlanStep> steps;
  std::vector<std::pair<int64_t, TensorId>> offloadsAfter;
};
} // namespace

Replayer::Replayer(const PlanningGraph &graph, const MachineModel &device,
                   ReplayOptions options)
    : graph(graph), device(device), options(std::move(options)),
      prefixTime(graph.numOps() + 1), opTime(graph.numOps()),
      rebuiltBy(graph.numTensors(), kNotRecomputable),
      pinnedTensors(graph.numTensors()),
      keepUntil(this->options.keepUntil.empty() ? graph.lastOpNeeding()
                                                : this->options.keepUntil),
      expiringAfter(graph.numOps()), resident(graph.numTensors()),
      hostCopy(graph.numTensors()), offloaded(graph.numTensors()),
      prefetchedUnread(graph.numTensors()), nextUse(graph.numTensors()),
      locks(graph.numTensors()), version(graph.numTensors()),
      lastTouchStep(graph.numTensors(), -1), lastTouchTime(graph.numTensors()),
      prefetchBefore(graph.numOps()), held(graph.numTensors()),
      opStamp(graph.numOps()) {
  for (auto [i, op] : llvm::enumerate(graph.ops())) {
    opTime[i] = device.computeTime(op.cost);
    prefixTime[i + 1] = prefixTime[i] + opTime[i];
  }
  double total = prefixTime.back();
  tieBreakPerOp =
      total > 0 ? 1e-6 * total / std::max<size_t>(graph.numOps(), 1) : 1;
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (graph.canRecompute(t))
      rebuiltBy[t] = *tensor.producer;
    pinnedTensors[t] = graph.mustStayResident(t) && !onHost(t);
    int64_t lastUse = tensor.consumers.empty() ? -1 : tensor.consumers.back();
    if (keepUntil[t] > lastUse)
      expiringAfter[keepUntil[t]].push_back(t);
  }
}

double Replayer::recomputeCost(TensorId t) const {
  if (rebuiltBy[t] == kNotRecomputable)
    return kInfinity;
  // Rebuilding t at its next use also rebuilds whatever of its ancestry is
  // missing then (DTR's "evicted neighbourhood"): what is missing now, and
  // what is resident now but will have been freed as dead by then. Counting
  // only the first made tensors whose inputs were about to die look cheap;
  // on the random layered graphs, dropping one then cost a rerun of most of
  // the graph. The walk stops after a few ops to stay cheap: beyond that
  // the tensor is already among the costliest to drop; what lies beyond is
  // priced as options.longRebuilds says.
  constexpr unsigned kMaxOps = 32;
  OpId rebuildAt = nextUseOf(t);
  auto missingAt = [&](TensorId input) {
    return !resident[input] ||
           (!pinned(input) && keepUntil[input] < int64_t(rebuildAt));
  };
  ++costStamp;
  double cost = 0;
  // Adds what bringing `missing` back costs by itself: its copy in, or one
  // run of its producer, counted once. Returns the producer when its run
  // was counted here, so that its inputs come next.
  auto charge = [&](TensorId missing) -> std::optional<OpId> {
    if (offloaded[missing] && !resident[missing]) {
      cost += device.copyTime(graph.tensor(missing).bytes);
      return std::nullopt;
    }
    OpId producer = rebuiltBy[missing];
    if (producer == kNotRecomputable ||
        !graph.canRerunBefore(producer, rebuildAt)) {
      cost = kInfinity;
      return std::nullopt;
    }
    if (opStamp[producer] == costStamp)
      return std::nullopt;
    opStamp[producer] = costStamp;
    cost += opTime[producer];
    return producer;
  };
  std::vector<TensorId> &worklist = costWorklist;
  worklist.assign(1, t);
  unsigned visited = 0;
  while (!worklist.empty() && visited < kMaxOps) {
    TensorId missing = worklist.back();
    worklist.pop_back();
    std::optional<OpId> producer = charge(missing);
    if (cost == kInfinity)
      return kInfinity;
    if (!producer)
      continue;
    ++visited;
    for (TensorId input : graph.op(*producer).inputs)
      if (missingAt(input))
        worklist.push_back(input);
  }
  if (worklist.empty())
    return cost;
  switch (options.longRebuilds) {
  case LongRebuilds::CostTheWalk:
    return cost;
  case LongRebuilds::Refuse:
    return kInfinity;
  case LongRebuilds::CostTheFrontier:
    for (TensorId missing : worklist)
      charge(missing);
    return cost;
  }
  llvm_unreachable("every LongRebuilds is handled");
}

double Replayer::offloadCost(TensorId t) const {
  const PlanTensor &tensor = graph.tensor(t);
  if (!tensor.offloadable || !device.canOffload())
    return kInfinity;
  double copy = device.copyTime(tensor.bytes);
  double copyOut = hostCopy[t] ? 0 : copy;
  if (!device.copiesOverlapCompute)
    return copyOut + copy;
  // The copy out started right after the last touch; freeing now waits for
  // whatever part of it is not done. The copy back hides behind the compute
  // before the next use.
  double outExposed =
      hostCopy[t]
          ? 0
          : std::max(0.0, std::max(d2hFree, lastTouchTime[t]) + copy - clock);
  double inExposed = std::max(0.0, copy - timeUntil(nextUseOf(t)));
  return outExposed + inExposed;
}

bool Replayer::isEvictable(TensorId t) const {
  return resident[t] && locks[t] == 0 && !pinned(t) &&
         (hasFutureUse(t) || held[t]) && graph.tensor(t).bytes > 0;
}

double Replayer::score(TensorId t) const {
  // Time lost per byte freed and per unit of time it stays freed: cheap,
  // large tensors needed late go first (Belady's rule weighted by cost).
  // Held tensors are only possibly needed again by the current rebuild.
  if (!hasFutureUse(t))
    return 0;
  double cost = std::min(recomputeCost(t), offloadCost(t));
  OpId next = nextUseOf(t);
  double gap = timeUntil(next) + (next - cursor) * tieBreakPerOp;
  return cost / (static_cast<double>(graph.tensor(t).bytes) * gap);
}

void Replayer::pushCandidate(TensorId t) {
  if (options.budget && isEvictable(t))
    heap.push({score(t), t, version[t]});
}

std::optional<TensorId> Replayer::popVictim() {
  // Keys only grow while a tensor sits in the heap (its next use comes
  // closer), so a stale key is a lower bound: re-key the top until it stays.
  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    if (top.version != version[top.tensor] || !isEvictable(top.tensor))
      continue;
    double current = score(top.tensor);
    if (std::isinf(current))
      continue;
    if (!heap.empty() && current > heap.top().score) {
      heap.push({current, top.tensor, top.version});
      continue;
    }
    return top.tensor;
  }
  return std::nullopt;
}

void Replayer::evict(TensorId t) {
  if (options.evictionCosts && hasFutureUse(t) && !(*options.evictionCosts)[t])
    (*options.evictionCosts)[t] =
        EvictionCost{recomputeCost(t), offloadCost(t), timeUntil(nextUseOf(t))};
  // The caller's host memory always takes a tensor that lives there back.
  offloaded[t] =
      onHost(t) || (hasFutureUse(t) && offloadCost(t) <= recomputeCost(t));
  if (offloaded[t]) {
    if (!hostCopy[t])
      copyOut(t);
    // Brought in early and evicted before its use: bringing it in early
    // again would repeat that, so it comes in when its reader needs it.
    if (hasFutureUse(t) && !prefetchedUnread[t])
      schedulePrefetch(t);
  }
  emitFree(t);
}

void Replayer::copyOut(TensorId t) {
  double copy = device.copyTime(graph.tensor(t).bytes);
  offloadsAfter.push_back({lastTouchStep[t], t});
  double done = std::max(d2hFree, lastTouchTime[t]) + copy;
  d2hFree = done;
  clock = device.copiesOverlapCompute ? std::max(clock, done) : clock + copy;
  hostCopy[t] = true;
}

void Replayer::schedulePrefetch(TensorId t) {
  // As late as the copy still hides behind compute, never before the next
  // op.
  double copy = device.copyTime(graph.tensor(t).bytes);
  OpId next = nextUseOf(t);
  double target = prefixTime[next] - copy;
  auto it =
      std::upper_bound(prefixTime.begin(), prefixTime.begin() + next, target);
  OpId issue = it == prefixTime.begin() ? 0 : OpId(it - prefixTime.begin() - 1);
  prefetchBefore[std::clamp<OpId>(issue, cursor + 1, next)].push_back(t);
}

bool Replayer::reserve(uint64_t bytes) {
  if (!options.budget)
    return true;
  while (residentBytes + bytes > *options.budget) {
    std::optional<TensorId> victim = popVictim();
    if (!victim)
      return false;
    evict(*victim);
  }
  return true;
}

void Replayer::setResident(TensorId t) {
  if (!resident[t])
    residentBytes += graph.tensor(t).bytes;
  resident[t] = true;
  ++version[t];
  lastTouchStep[t] = steps.size() - 1;
  lastTouchTime[t] = clock;
}

void Replayer::emitFree(TensorId t) {
  steps.push_back(PlanStep::free(t));
  resident[t] = false;
  residentBytes -= graph.tensor(t).bytes;
  ++version[t];
}

void Replayer::releaseIfDead(TensorId t) {
  // A tensor in the caller's host memory goes at its last read even if a
  // later recomputation may need it: that one prefetches it back.
  if (!resident[t] || locks[t] != 0 || pinned(t) || hasFutureUse(t) ||
      (!onHost(t) && keepUntil[t] > int64_t(cursor)))
    return;
  // While inputs of the current op are rebuilt, another branch of the
  // rebuild may read this tensor again: keep it, as the first to evict.
  if (rebuilding) {
    if (!held[t]) {
      held[t] = true;
      heldList.push_back(t);
    }
    return;
  }
  // The caller's host copy must end up holding the final value.
  if (onHost(t)) {
    if (!hostCopy[t])
      copyOut(t);
    offloaded[t] = true;
  }
  emitFree(t);
}

void Replayer::afterUse(TensorId t) {
  releaseIfDead(t);
  pushCandidate(t);
}

llvm::Error Replayer::budgetError() const {
  // The tensors resident at the start can pass the budget in a graph
  // without ops.
  if (cursor >= graph.numOps())
    return llvm::createStringError("budget exceeded before the first op");
  return llvm::createStringError(
      llvm::formatv("budget exceeded at op '{0}'", graph.op(cursor).name));
}

llvm::Error Replayer::runOp(OpId id, bool isOriginal) {
  const PlanOp &op = graph.op(id);
  uint64_t outputBytes = 0;
  for (TensorId output : op.outputs)
    if (!graph.tensor(output).reusesStorageOf)
      outputBytes += graph.tensor(output).bytes;
  if (!reserve(outputBytes))
    return budgetError();
  // Near the smallest budget, rebuilds can cascade; past this many steps the
  // budget counts as not met rather than planned at any cost.
  if (steps.size() > 32 * graph.numOps() + 4096)
    return llvm::createStringError("too many recomputations");
  steps.push_back(PlanStep::compute(id));
  clock += opTime[id];
  for (TensorId output : op.outputs) {
    // The run consumes the instance whose storage the output takes over.
    if (std::optional<TensorId> input = graph.tensor(output).reusesStorageOf) {
      resident[*input] = false;
      residentBytes -= graph.tensor(*input).bytes;
      ++version[*input];
    }
    setResident(output);
  }
  // Host copies of a value overwritten in place are stale.
  for (TensorId written : op.writes)
    hostCopy[written] = offloaded[written] = false;
  for (TensorId input : op.inputs) {
    --locks[input];
    prefetchedUnread[input] = false;
    lastTouchStep[input] = steps.size() - 1;
    lastTouchTime[input] = clock;
    if (isOriginal)
      ++nextUse[input];
  }
  if (isOriginal && !options.dropAfter.empty())
    for (TensorId t : options.dropAfter[id])
      if (resident[t] && locks[t] == 0 && !pinned(t) && hasFutureUse(t))
        emitFree(t);
  for (TensorId t : llvm::concat<const TensorId>(op.inputs, op.outputs))
    afterUse(t);
  return llvm::Error::success();
}

llvm::Error Replayer::prefetch(TensorId t) {
  if (!reserve(graph.tensor(t).bytes))
    return budgetError();
  steps.push_back(PlanStep::prefetch(t));
  setResident(t);
  prefetchedUnread[t] = true;
  return llvm::Error::success();
}

llvm::Error Replayer::makeResident(TensorId root) {
  // Depth-first over missing ancestors: an op reruns once its inputs are
  // resident. Each input is locked from the moment its reader starts
  // gathering inputs until the reader runs, so only the inputs along the
  // current path are pinned, not those of every pending recomputation. The
  // caller has locked `root`.
  struct Frame {
    OpId op;
    unsigned nextInput = 0;
  };
  llvm::SmallVector<Frame> path;
  // Returns whether t is resident now; otherwise its producer was pushed.
  auto visit = [&](TensorId t) -> llvm::Expected<bool> {
    if (!resident[t] && offloaded[t]) {
      // Nothing hides this copy: its reader is about to run.
      clock += device.copyTime(graph.tensor(t).bytes);
      if (llvm::Error err = prefetch(t))
        return std::move(err);
    }
    if (resident[t])
      return true;
    if (!graph.canRecompute(t) ||
        !graph.canRerunBefore(*graph.tensor(t).producer, cursor))
      return llvm::createStringError(llvm::formatv(
          "'{0}' is gone and cannot be rebuilt", graph.tensor(t).name));
    path.push_back({*graph.tensor(t).producer});
    return false;
  };
  llvm::Expected<bool> ready = visit(root);
  if (!ready || *ready)
    return ready.takeError();
  while (!path.empty()) {
    Frame &frame = path.back();
    const PlanOp &op = graph.op(frame.op);
    if (frame.nextInput < op.inputs.size()) {
      TensorId input = op.inputs[frame.nextInput++];
      ++locks[input];
      if (llvm::Expected<bool> inputReady = visit(input); !inputReady)
        return inputReady.takeError();
      continue;
    }
    OpId done = frame.op;
    path.pop_back();
    if (llvm::Error err = runOp(done, /*isOriginal=*/false))
      return err;
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<PlanStep>> Replayer::run() {
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (tensor.producer)
      continue;
    resident[t] = true;
    residentBytes += tensor.bytes;
  }
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (tensor.producer)
      continue;
    if (onHost(t)) {
      // Passed in host memory: brought in before its first use (on demand
      // when that is the first op).
      emitFree(t);
      hostCopy[t] = offloaded[t] = true;
      if (hasFutureUse(t) && nextUseOf(t) > 0)
        schedulePrefetch(t);
      continue;
    }
    if (tensor.consumers.empty() && !graph.mustStayResident(t))
      emitFree(t);
    pushCandidate(t);
  }
  if (options.budget && residentBytes > *options.budget)
    return budgetError();

  for (cursor = 0; cursor < graph.numOps(); ++cursor) {
    // Prefetches scheduled by earlier offloads, unless the tensor came back
    // early for a recomputation.
    for (TensorId t : prefetchBefore[cursor]) {
      if (resident[t] || !hasFutureUse(t))
        continue;
      if (llvm::Error err = prefetch(t))
        return std::move(err);
      pushCandidate(t);
    }
    rebuilding = true;
    if (!options.rebuildBefore.empty())
      for (TensorId t : options.rebuildBefore[cursor]) {
        if (resident[t] || !hasFutureUse(t))
          continue;
        ++locks[t];
        if (llvm::Error err = makeResident(t))
          return std::move(err);
        --locks[t];
        pushCandidate(t);
      }
    for (TensorId input : graph.op(cursor).inputs) {
      ++locks[input];
      if (llvm::Error err = makeResident(input))
        return std::move(err);
    }
    rebuilding = false;
    if (llvm::Error err = runOp(cursor, /*isOriginal=*/true))
      return std::move(err);
    for (TensorId t : expiringAfter[cursor])
      releaseIfDead(t);
    for (TensorId t : heldList) {
      held[t] = false;
      releaseIfDead(t);
    }
    heldList.clear();
  }

  // Each offload goes right after the step that last touched its tensor.
  llvm::stable_sort(offloadsAfter, [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
  std::vector<PlanStep> program;
  program.reserve(steps.size() + offloadsAfter.size());
  auto pending = offloadsAfter.begin();
  auto flushOffloadsAfter = [&](int64_t index) {
    for (; pending != offloadsAfter.end() && pending->first == index; ++pending)
      program.push_back(PlanStep::offload(pending->second));
  };
  flushOffloadsAfter(-1);
  for (auto [index, step] : llvm::enumerate(steps)) {
    program.push_back(step);
    flushOffloadsAfter(index);
  }
  return freeAfterLastUse(graph, program);
}

llvm::Expected<std::vector<PlanStep>>
vram::planner::replay(const PlanningGraph &graph, const MachineModel &device,
                      ReplayOptions options) {
  return Replayer(graph, device, std::move(options)).run();
}
