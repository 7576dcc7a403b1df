//===- DropSelection.cpp - recompute decisions chosen ahead of the replay -===//
//
// The replay decides what to evict when memory runs out, one tensor at a
// time. On wide DAGs that lets rebuilds cascade: a dropped tensor's producer
// finds its own inputs dropped or dead, their producers theirs, and so on
// (the random layered graphs, docs/planner.md). This picks the drops ahead,
// over the whole schedule: a greedy weighted cover of the live bytes above
// the budget, the covering program the interval-drop relaxation
// (LowerBound.cpp) solves exactly, where every choice stays a plan: a rerun
// reads only tensors resident at its point (an input dead by then is kept
// alive for it, at its bytes in the profile, or rebuilt too, or the rerun
// moves up to where its inputs are all still resident and the tensor stays
// from there), and a tensor dropped across a rerun that reads it is rebuilt
// for that rerun instead of at its next use. Candidates are taken by excess
// removed per second of recompute, re-scored lazily.
//
//===----------------------------------------------------------------------===//

#include "DropSelection.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <memory>
#include <queue>

using namespace vram::planner;
using namespace vram::planner::drop_selection;

// Named rather than anonymous: DropSelection (DropSelection.h) holds a
// DropSelector.
namespace vram::planner::drop_selection {
/// Drops `tensor` after its use at op `after` and reruns its producer right
/// before its next use, op `until`.
struct Candidate {
  TensorId tensor;
  OpId after, until;
};

/// `delta` bytes live while each op in [first, last] runs.
struct Change {
  OpId first, last;
  int64_t delta;
};

/// A drop taken: `tensor` leaves after op `after` and comes back by a rerun
/// of its producer right before op `rebuiltAt`, which is its next use or,
/// when a rerun of one of its readers needs it sooner, that rerun's point
/// (the segment a checkpointed backward pass recomputes), or a point chosen
/// ahead of its next use (`early`).
struct Drop {
  TensorId tensor;
  OpId after, until, rebuiltAt;
  /// What its reruns cost.
  double rerunTime;
  /// The replay rebuilds it at rebuiltAt without waiting for a reader.
  bool early;
  bool removed = false;
};

/// What taking a candidate does: the profile changes, the ops it reruns,
/// the tensors those reruns read (with where), and the drops whose rebuild
/// it moves earlier (index into `drops`, new point).
struct Effect {
  llvm::SmallVector<Change, 4> changes;
  llvm::SmallVector<OpId, 2> reruns;
  llvm::SmallVector<std::pair<TensorId, OpId>, 4> reads;
  llvm::SmallVector<std::pair<unsigned, OpId>, 1> moves;
  OpId rebuiltAt = 0;
  bool early = false;
  double rerunTime = 0;
  /// Tensors looked at, tentative ones included: bounds the search.
  unsigned visits = 0;

  /// Where a tentative part of the effect starts, to take it back.
  struct Mark {
    size_t changes, reruns, reads, moves;
    double rerunTime;
  };
  Mark mark() const {
    return {changes.size(), reruns.size(), reads.size(), moves.size(),
            rerunTime};
  }
  void rollBack(const Mark &mark) {
    changes.truncate(mark.changes);
    reruns.truncate(mark.reruns);
    reads.truncate(mark.reads);
    moves.truncate(mark.moves);
    rerunTime = mark.rerunTime;
  }
};

/// What one of effectOf's variants of a candidate does to the schedule
/// before any drop is taken: the same for every ranking, so scored once.
struct FirstScore {
  /// Excess removed; 0 when the variant does not apply or removes none.
  int64_t removed = 0;
  double rerunTime = 0;
  /// Work spent scoring it, charged to every ranking that considers it as
  /// if that ranking had scored it itself.
  uint64_t work = 0;
};

/// effectOf's variants, in the order bestEffect weighs them: (rebuildDead,
/// early).
constexpr std::pair<bool, bool> kVariants[] = {
    {false, false}, {true, false}, {false, true}};

class DropSelector {
public:
  /// The selection before its first drop: the schedule's live bytes, the
  /// candidates, and each candidate's first scores (the early reruns' only
  /// with `earlyReruns`).
  DropSelector(const PlanningGraph &graph, const MachineModel &device,
               uint64_t budget, bool earlyReruns);
  /// The greedy cover under `ranking`, on a copy of the starting point.
  std::optional<ReplayOptions> run(DropRanking ranking) const;

private:
  /// The greedy cover itself, on this copy.
  std::optional<ReplayOptions> cover();
  int64_t excessAt(OpId op) const {
    return std::max<int64_t>(0, live[op] - budget);
  }
  /// The effect of taking `c`, with a dead input of a rerun rebuilt too
  /// (`rebuildDead`, a few levels deep) or kept alive until the rerun; none
  /// if no saving is left or the rebuilds go too deep. `early`: the rerun
  /// goes at the last op where every input of the producer is still
  /// resident, ahead of the next use, and the tensor stays from there.
  std::optional<Effect> effectOf(const Candidate &c, bool rebuildDead,
                                 bool early) const;
  /// Adds to `effect` what it takes for `t` to be resident right before op
  /// `at`; false past the search's limits.
  bool requireAt(TensorId t, OpId at, bool rebuildDead, unsigned depth,
                 Effect &effect) const;
  /// The rerun of `producer` right before op `at`, with its inputs.
  bool rerunAt(OpId producer, OpId at, bool rebuildDead, unsigned depth,
               Effect &effect) const;
  /// Excess over the budget that `changes` remove (negative: add).
  int64_t gain(llvm::ArrayRef<Change> changes) const;
  /// The best of the effects of `c` (effectOf's variants the ranking
  /// allows), by its score (excess removed, weighted by the ranking's
  /// exponent, per second of recompute), with that score.
  std::optional<std::pair<Effect, double>> bestEffect(const Candidate &c) const;
  /// One variant of `c`'s effect before any drop is taken.
  FirstScore firstScore(const Candidate &c, bool rebuildDead, bool early) const;
  /// ranking's score of `removed` bytes of excess for `rerunTime` of reruns.
  double score(int64_t removed, double rerunTime) const {
    return std::pow(double(removed), ranking.excessExponent) /
           (rerunTime + minRerunTime);
  }
  void take(const Candidate &c, const Effect &effect);
  /// Undoes the costliest drops that the others make unnecessary.
  void removeRedundantDrops();

  const PlanningGraph &graph;
  /// A copy: a selection outlives the model it was made with.
  MachineModel device;
  int64_t budget;
  DropRanking ranking;
  /// Keeps a free rerun ahead of every paid one without dividing by zero.
  double minRerunTime;
  /// Bytes live while each op runs, with the drops taken so far.
  std::vector<int64_t> live;
  int64_t totalExcess = 0;
  /// By tensor: the last op that reads it, a rerun right before an op
  /// counting as a read by that op.
  std::vector<int64_t> readUntil;
  /// By tensor: the ops before which a taken rerun reads it, and its drops.
  std::vector<llvm::SmallVector<OpId, 1>> readByRerunAt;
  std::vector<llvm::SmallVector<unsigned, 1>> dropsOf;
  std::vector<Drop> drops;
  ReplayOptions options;
  /// What every ranking starts from and only reads, shared by the copies
  /// run() makes.
  struct Start {
    std::vector<Candidate> candidates;
    /// By candidate, per kVariants entry.
    std::vector<std::array<FirstScore, std::size(kVariants)>> firstScores;
  };
  /// None where the selection takes no drop (nothing over the budget, or a
  /// graph too large to score).
  std::shared_ptr<const Start> start;
  bool earlyScored;
  /// Ops walked while scoring, to stop on graphs where that grows large.
  mutable uint64_t work = 0;
};
} // namespace vram::planner::drop_selection

/// Whether a rerun of `t`'s producer can rebuild it: the producer makes no
/// output in an input's storage (that input is gone once it ran).
static bool canRebuild(const PlanningGraph &graph, TensorId t) {
  return graph.canRecompute(t) &&
         llvm::none_of(graph.op(*graph.tensor(t).producer).outputs,
                       [&](TensorId out) {
                         return graph.tensor(out).reusesStorageOf.has_value();
                       });
}

DropSelector::DropSelector(const PlanningGraph &graph,
                           const MachineModel &device, uint64_t budget,
                           bool earlyReruns)
    : graph(graph), device(device), budget(int64_t(budget)),
      minRerunTime(1e-9 * device.computeTime(graph.totalCost()) /
                   std::max<size_t>(1, graph.numOps())),
      readUntil(graph.numTensors(), -1), readByRerunAt(graph.numTensors()),
      dropsOf(graph.numTensors()), earlyScored(earlyReruns) {
  // The unplanned program frees every tensor after its last read.
  Plan unplanned =
      llvm::cantFail(planKeepAll(graph, MachineModel()),
                     "the schedule of a verified graph is a valid plan");
  live = getComputeLiveBytes(unplanned.steps, unplanned.simulation);
  for (OpId t = 0; t < graph.numOps(); ++t)
    totalExcess += excessAt(t);
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    readUntil[t] = graph.mustStayResident(t) ? int64_t(graph.numOps())
                   : !tensor.consumers.empty()
                       ? int64_t(tensor.consumers.back())
                       : (tensor.producer ? int64_t(*tensor.producer) : -1);
  options.budget = budget;
  options.dropAfter.resize(graph.numOps());
  options.keepUntil = graph.lastOpNeeding();

  // Scoring a candidate walks its gap, and gaps grow with the graph (a
  // forward activation waits for the backward pass): about 0.4 s at 10k
  // ops. Beyond this size the replay plans alone.
  constexpr size_t kMaxOps = 16384;
  if (totalExcess == 0 || graph.numOps() > kMaxOps)
    return;
  // Ops above the budget before any drop, counted up to each op: a gap
  // that spans none of them is never worth a rerun.
  std::vector<unsigned> excessOpsBefore(graph.numOps() + 1);
  for (OpId op = 0; op < graph.numOps(); ++op)
    excessOpsBefore[op + 1] = excessOpsBefore[op] + (excessAt(op) > 0);
  auto built = std::make_shared<Start>();
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (!canRebuild(graph, t) || graph.mustStayResident(t) || tensor.bytes == 0)
      continue;
    OpId use = *tensor.producer;
    for (OpId next : tensor.consumers) {
      if (next > use + 1 && graph.canRerunBefore(*tensor.producer, next) &&
          excessOpsBefore[next] > excessOpsBefore[use + 1])
        built->candidates.push_back({TensorId(t), use, next});
      use = next;
    }
  }
  built->firstScores.resize(built->candidates.size());
  for (auto [c, scores] : llvm::zip(built->candidates, built->firstScores))
    for (auto [variant, score] : llvm::zip(kVariants, scores)) {
      auto [rebuildDead, early] = variant;
      if (!early || earlyReruns)
        score = firstScore(c, rebuildDead, early);
    }
  start = std::move(built);
  // What it took is charged to each ranking that weighs the scores.
  work = 0;
}

FirstScore DropSelector::firstScore(const Candidate &c, bool rebuildDead,
                                    bool early) const {
  FirstScore score;
  uint64_t before = work;
  if (std::optional<Effect> effect = effectOf(c, rebuildDead, early)) {
    score.removed = std::max<int64_t>(0, gain(effect->changes));
    score.rerunTime = effect->rerunTime;
  }
  score.work = work - before;
  return score;
}

/// How many reruns deep one drop may reach.
constexpr unsigned kMaxRerunDepth = 4;

bool DropSelector::rerunAt(OpId producer, OpId at, bool rebuildDead,
                           unsigned depth, Effect &effect) const {
  if (depth > kMaxRerunDepth || !graph.canRerunBefore(producer, at))
    return false;
  return llvm::all_of(graph.op(producer).inputs, [&](TensorId input) {
    return requireAt(input, at, rebuildDead, depth, effect);
  });
}

bool DropSelector::requireAt(TensorId t, OpId at, bool rebuildDead,
                             unsigned depth, Effect &effect) const {
  // Rebuilding dead inputs branches at every op with several inputs; past
  // a few dozen tensors the candidate is not worth its search.
  constexpr unsigned kMaxVisits = 64;
  ++work;
  if (++effect.visits > kMaxVisits)
    return false;
  for (unsigned index : dropsOf[t]) {
    const Drop &drop = drops[index];
    if (drop.after >= at || at >= drop.until)
      continue;
    // Gone at `at` unless rebuilt by then: rebuild it at `at` instead.
    if (drop.rebuiltAt > at) {
      auto moved = llvm::find_if(
          effect.moves, [&](auto move) { return move.first == index; });
      if (moved == effect.moves.end()) {
        effect.moves.push_back({index, at});
        effect.changes.push_back(
            {at, drop.rebuiltAt - 1, int64_t(graph.tensor(t).bytes)});
        if (!rerunAt(*graph.tensor(t).producer, at, rebuildDead, depth + 1,
                     effect))
          return false;
      } else if (moved->second > at) {
        return false;
      }
    }
    effect.reads.push_back({t, at});
    return true;
  }
  if (readUntil[t] >= int64_t(at)) {
    effect.reads.push_back({t, at});
    return true;
  }
  // Dead by then: rebuilt from its own inputs, or kept alive until `at`.
  if (rebuildDead && canRebuild(graph, t)) {
    OpId producer = *graph.tensor(t).producer;
    if (llvm::is_contained(effect.reruns, producer))
      return true;
    Effect::Mark mark = effect.mark();
    effect.reruns.push_back(producer);
    effect.rerunTime += device.computeTime(graph.op(producer).cost);
    if (rerunAt(producer, at, rebuildDead, depth + 1, effect))
      return true;
    effect.rollBack(mark);
  }
  if (readUntil[t] + 1 <= int64_t(at) - 1)
    effect.changes.push_back(
        {OpId(readUntil[t] + 1), at - 1, int64_t(graph.tensor(t).bytes)});
  effect.reads.push_back({t, at});
  return true;
}

std::optional<Effect>
DropSelector::effectOf(const Candidate &c, bool rebuildDead, bool early) const {
  // A taken rerun that reads the tensor within the gap brings it back
  // there.
  Effect effect;
  effect.rebuiltAt = c.until;
  for (OpId at : readByRerunAt[c.tensor])
    if (c.after < at && at < effect.rebuiltAt)
      effect.rebuiltAt = at;
  OpId producer = *graph.tensor(c.tensor).producer;
  if (early) {
    // The last read of the producer's first input to die (the producer
    // itself reads them all, so there is one): a rerun right before it
    // needs nothing kept alive. On wide graphs, where an op reads many
    // tensors that die long before the dropped one's next use, keeping them
    // costs more than the drop saves.
    int64_t inputsResident = effect.rebuiltAt;
    for (TensorId input : graph.op(producer).inputs)
      inputsResident = std::min(inputsResident, readUntil[input]);
    if (inputsResident >= int64_t(effect.rebuiltAt))
      return std::nullopt;
    effect.rebuiltAt = OpId(inputsResident);
    effect.early = true;
  }
  if (effect.rebuiltAt <= c.after + 1)
    return std::nullopt;
  effect.changes.push_back({c.after + 1, effect.rebuiltAt - 1,
                            -int64_t(graph.tensor(c.tensor).bytes)});
  effect.reruns.push_back(producer);
  effect.rerunTime = device.computeTime(graph.op(producer).cost);
  if (!rerunAt(producer, effect.rebuiltAt, rebuildDead, 0, effect))
    return std::nullopt;
  return effect;
}

int64_t DropSelector::gain(llvm::ArrayRef<Change> changes) const {
  // The changes' ends in op order (a handful), swept along the ops they
  // span: (op, delta) where the running change steps by delta.
  llvm::SmallVector<std::pair<OpId, int64_t>, 8> steps;
  for (const Change &change : changes) {
    steps.push_back({change.first, change.delta});
    steps.push_back({change.last + 1, -change.delta});
  }
  llvm::sort(steps);
  int64_t removed = 0, running = 0;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    running += steps[i].second;
    OpId end = steps[i + 1].first;
    work += end - steps[i].first;
    if (running == 0)
      continue;
    for (OpId op = steps[i].first; op < end; ++op)
      removed +=
          excessAt(op) - std::max<int64_t>(0, live[op] + running - budget);
  }
  return removed;
}

std::optional<std::pair<Effect, double>>
DropSelector::bestEffect(const Candidate &c) const {
  std::optional<std::pair<Effect, double>> best;
  for (auto [rebuildDead, early] : kVariants) {
    if (early && !ranking.earlyReruns)
      continue;
    std::optional<Effect> effect = effectOf(c, rebuildDead, early);
    if (!effect)
      continue;
    int64_t removed = gain(effect->changes);
    if (removed <= 0)
      continue;
    double ratio = score(removed, effect->rerunTime);
    if (!best || ratio > best->second)
      best = {std::move(*effect), ratio};
  }
  return best;
}

void DropSelector::take(const Candidate &c, const Effect &effect) {
  for (const Change &change : effect.changes)
    for (OpId op = change.first; op <= change.last; ++op) {
      totalExcess -= excessAt(op);
      live[op] += change.delta;
      totalExcess += excessAt(op);
    }
  for (auto [index, to] : effect.moves)
    drops[index].rebuiltAt = to;
  dropsOf[c.tensor].push_back(drops.size());
  drops.push_back({c.tensor, c.after, c.until, effect.rebuiltAt,
                   effect.rerunTime, effect.early});
  for (auto [read, at] : effect.reads) {
    readByRerunAt[read].push_back(at);
    readUntil[read] = std::max<int64_t>(readUntil[read], at);
    options.keepUntil[read] = std::max<int64_t>(options.keepUntil[read], at);
  }
}

void DropSelector::removeRedundantDrops() {
  // Keeping a drop's tensor resident again is always valid: reruns that
  // read it find it there. What its reruns read stays as taken.
  std::vector<unsigned> order(drops.size());
  for (unsigned i = 0; i < drops.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return drops[a].rerunTime > drops[b].rerunTime;
  });
  for (unsigned index : order) {
    Drop &drop = drops[index];
    int64_t bytes = graph.tensor(drop.tensor).bytes;
    bool fits = true;
    for (OpId op = drop.after + 1; fits && op < drop.rebuiltAt; ++op)
      fits = live[op] + bytes <= budget;
    if (!fits)
      continue;
    for (OpId op = drop.after + 1; op < drop.rebuiltAt; ++op)
      live[op] += bytes;
    drop.removed = true;
  }
}

std::optional<ReplayOptions> DropSelector::run(DropRanking ranking) const {
  assert((!ranking.earlyReruns || earlyScored) &&
         "a ranking with early reruns on a selection that did not score them");
  // The candidates and their first scores are shared, not copied.
  DropSelector copy = *this;
  copy.ranking = ranking;
  return copy.cover();
}

std::optional<ReplayOptions> DropSelector::cover() {
  if (!start || start->candidates.empty())
    return std::nullopt;
  const std::vector<Candidate> &candidates = start->candidates;
  // Lazy greedy: a score computed since the last take is exact, an older
  // one is re-computed when it reaches the top.
  struct Entry {
    double score;
    unsigned candidate;
    unsigned round;
    bool operator<(const Entry &other) const { return score < other.score; }
  };
  auto rescore = [&](unsigned index) -> std::optional<double> {
    if (auto best = bestEffect(candidates[index]))
      return best->second;
    return std::nullopt;
  };
  // The first scores, weighed as this ranking weighs them, as bestEffect
  // would have: the first variant with the highest score wins.
  std::priority_queue<Entry> heap;
  for (auto [i, scores] : llvm::enumerate(start->firstScores)) {
    std::optional<double> best;
    for (auto [variant, first] : llvm::zip(kVariants, scores)) {
      if (variant.second && !ranking.earlyReruns)
        continue;
      work += first.work;
      if (first.removed <= 0)
        continue;
      double ratio = score(first.removed, first.rerunTime);
      if (!best || ratio > *best)
        best = ratio;
    }
    if (best)
      heap.push({*best, unsigned(i), 0});
  }
  unsigned round = 0;
  // Scoring walks gaps and rebuild chains; on large, wide graphs at tight
  // budgets that adds up: past this many steps the drops so far stand.
  constexpr uint64_t kMaxWork = 20'000'000;
  while (totalExcess > 0 && !heap.empty() && work < kMaxWork) {
    Entry top = heap.top();
    heap.pop();
    if (top.round != round) {
      if (std::optional<double> s = rescore(top.candidate))
        heap.push({*s, top.candidate, round});
      continue;
    }
    const Candidate &c = candidates[top.candidate];
    take(c, bestEffect(c)->first);
    ++round;
  }
  if (totalExcess == 0)
    removeRedundantDrops();
  if (drops.empty())
    return std::nullopt;
  options.rebuildBefore.resize(graph.numOps());
  for (const Drop &drop : drops) {
    if (drop.removed)
      continue;
    options.dropAfter[drop.after].push_back(drop.tensor);
    if (drop.early)
      options.rebuildBefore[drop.rebuiltAt].push_back(drop.tensor);
  }
  return std::move(options);
}

DropSelection::DropSelection(const PlanningGraph &graph,
                             const MachineModel &device, uint64_t budget,
                             bool earlyReruns)
    : start(
          std::make_unique<DropSelector>(graph, device, budget, earlyReruns)) {}

DropSelection::~DropSelection() = default;

std::optional<ReplayOptions> DropSelection::select(DropRanking ranking) const {
  return start->run(ranking);
}

std::optional<ReplayOptions>
vram::planner::selectDrops(const PlanningGraph &graph,
                           const MachineModel &device, uint64_t budget,
                           DropRanking ranking) {
  return DropSelection(graph, device, budget, ranking.earlyReruns)
      .select(ranking);
}
