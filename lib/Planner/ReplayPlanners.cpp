//===- ReplayPlanners.cpp - baselines and the fast planner ----------------===//
//
// The planners built on the schedule replay (Replay.h): keep-all and Chen's
// sqrt(n) checkpoints as baselines, the memory floor, and the fast planner,
// which searches the budgets it hands the replay (and which persistent
// tensors start in host memory) for the cheapest plan within the budget,
// taking out the reruns each candidate plan does not need
// (RerunPruning.h).
//
//===----------------------------------------------------------------------===//

#include "DropSelection.h"
#include "RebuildCeiling.h"
#include "Replay.h"
#include "RerunPruning.h"
#include "RunGraph.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

using namespace vram::planner;

char BudgetTooSmallError::ID = 0;

void BudgetTooSmallError::log(llvm::raw_ostream &os) const {
  os << llvm::formatv("budget of {0} bytes cannot be met: the smallest budget "
                      "the planner meets is {1} bytes (no plan can go below "
                      "{2} bytes)",
                      budget, smallestFeasible, floor.bytes());
}

std::error_code BudgetTooSmallError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

static llvm::Expected<Plan> replayPlan(const PlanningGraph &graph,
                                       const MachineModel &device,
                                       ReplayOptions options) {
  llvm::Expected<std::vector<PlanStep>> steps =
      replay(graph, device, std::move(options));
  if (!steps)
    return steps.takeError();
  return buildPlan(graph, std::move(*steps), device);
}

llvm::Expected<Plan> vram::planner::planKeepAll(const PlanningGraph &graph,
                                                const MachineModel &device) {
  std::vector<OpId> schedule(graph.numOps());
  for (OpId op = 0; op < graph.numOps(); ++op)
    schedule[op] = op;
  return buildPlan(graph, insertFrees(graph, schedule), device);
}

uint64_t vram::planner::unplannedPeak(const PlanningGraph &graph) {
  return llvm::cantFail(planKeepAll(graph, MachineModel()),
                        "the schedule of a verified graph is a valid plan")
      .simulation.peakBytes;
}

llvm::Expected<Plan> vram::planner::planChenSqrtN(const PlanningGraph &graph,
                                                  const MachineModel &device) {
  unsigned forwardOps = llvm::count_if(
      graph.ops(), [](const PlanOp &op) { return !op.isBackward; });
  unsigned segment = std::max(1u, unsigned(std::ceil(std::sqrt(forwardOps))));
  // A non-checkpoint goes after each forward use the backward pass follows.
  ReplayOptions options;
  options.dropAfter.resize(graph.numOps());
  unsigned forwardIndex = 0;
  for (const PlanOp &op : graph.ops()) {
    if (op.isBackward)
      continue;
    bool checkpoint = ++forwardIndex % segment == 0;
    for (TensorId t : op.outputs) {
      if (checkpoint || !graph.canRecompute(t))
        continue;
      OpId use = *graph.tensor(t).producer;
      for (OpId next : graph.tensor(t).consumers) {
        if (!graph.op(use).isBackward && graph.op(next).isBackward)
          options.dropAfter[use].push_back(t);
        use = next;
      }
    }
  }
  return replayPlan(graph, device, std::move(options));
}

MemoryFloor vram::planner::memoryFloor(const PlanningGraph &graph,
                                       bool withHostMemory) {
  // Persistent tensors stay on the device unless they may live on host,
  // where an op still needs them resident while it reads them.
  auto stays = [&](TensorId t) {
    return graph.isPersistent(t) &&
           !(withHostMemory && graph.tensor(t).offloadable);
  };
  // Tensors with no producer are all resident when the first op runs.
  MemoryFloor floor;
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (stays(t))
      floor.residentArguments += tensor.bytes;
    else if (!tensor.producer && !graph.isPersistent(t) &&
             !tensor.consumers.empty())
      floor.footprint += tensor.bytes;
  }
  // Outputs of the graph stay from the op that makes them to the end.
  auto isMadeOutput = [&](TensorId t) {
    return graph.mustStayResident(t) && !graph.isPersistent(t) &&
           graph.tensor(t).producer;
  };
  uint64_t outputsMade = 0;
  for (OpId op = 0; op < graph.numOps(); ++op) {
    uint64_t touched = graph.bytesTouchedBy(op) + outputsMade;
    for (TensorId t : graph.op(op).inputs) {
      if (graph.isPersistent(t) && !stays(t))
        touched += graph.tensor(t).bytes;
      if (isMadeOutput(t))
        touched -= graph.tensor(t).bytes;
    }
    if (touched > floor.footprint) {
      floor.footprint = touched;
      floor.op = op;
    }
    for (TensorId t : graph.op(op).outputs)
      if (isMadeOutput(t))
        outputsMade += graph.tensor(t).bytes;
  }
  return floor;
}

namespace {
/// One run of the fast planner: its program, what it weighed and the peak
/// the program reaches, which may be well under the budget it aimed at.
struct FastAttempt {
  std::vector<PlanStep> steps;
  std::vector<std::optional<EvictionCost>> evictionCosts;
  uint64_t peak = 0;
  /// The simulated extra time, as a fraction of the unplanned step's.
  double overhead = 0;
};
} // namespace

/// `attempt(0)` .. `attempt(count - 1)`, replays independent of one another,
/// run on all cores; the results in that order, so that whoever picks among
/// them picks as a sequential loop would.
static std::vector<std::optional<FastAttempt>>
attemptEach(size_t count,
            llvm::function_ref<std::optional<FastAttempt>(size_t)> attempt) {
  std::vector<std::optional<FastAttempt>> results(count);
  llvm::parallelFor(0, count, [&](size_t i) { results[i] = attempt(i); });
  return results;
}

/// Drops chosen ahead for a replay: a selection for its budget and the
/// ranking to select with.
struct GuidingDrops {
  const DropSelection &selection;
  DropRanking ranking;
};

/// One replay at `budget`, with the persistent tensors `startOnHost` marks
/// in host memory, or guided by drops chosen ahead (none when the selection
/// chooses none), or with only short rebuilds (ReplayOptions).
static std::optional<FastAttempt>
attemptFast(const PlanningGraph &graph, uint64_t budget,
            const MachineModel &device,
            const std::vector<bool> &startOnHost = {},
            std::optional<GuidingDrops> guide = std::nullopt,
            LongRebuilds longRebuilds = LongRebuilds::CostTheWalk) {
  FastAttempt attempt;
  ReplayOptions options;
  if (guide) {
    std::optional<ReplayOptions> drops =
        guide->selection.select(guide->ranking);
    if (!drops)
      return std::nullopt;
    options = std::move(*drops);
  }
  options.budget = budget;
  options.startOnHost = startOnHost;
  options.longRebuilds = longRebuilds;
  attempt.evictionCosts.assign(graph.numTensors(), std::nullopt);
  options.evictionCosts = &attempt.evictionCosts;
  llvm::Expected<std::vector<PlanStep>> steps =
      replay(graph, device, std::move(options));
  if (!steps) {
    llvm::consumeError(steps.takeError());
    return std::nullopt;
  }
  llvm::Expected<SimulationResult> simulation = simulate(graph, *steps, device);
  attempt.steps = std::move(*steps);
  // A program the simulator rejects is a planner bug: it stands as meeting
  // the budget, so that building the plan reports it.
  if (!simulation) {
    llvm::consumeError(simulation.takeError());
    attempt.peak = budget;
    return attempt;
  }
  attempt.peak = simulation->peakBytes;
  attempt.overhead = simulation->overhead();
  return attempt;
}

/// `steps` as an attempt, simulated; none when the simulator rejects it.
static std::optional<FastAttempt> simulatedAttempt(const PlanningGraph &graph,
                                                   std::vector<PlanStep> steps,
                                                   const MachineModel &device) {
  llvm::Expected<SimulationResult> simulation = simulate(graph, steps, device);
  if (!simulation) {
    llvm::consumeError(simulation.takeError());
    return std::nullopt;
  }
  FastAttempt attempt;
  attempt.steps = std::move(steps);
  attempt.evictionCosts.assign(graph.numTensors(), std::nullopt);
  attempt.peak = simulation->peakBytes;
  attempt.overhead = simulation->overhead();
  return attempt;
}

/// `attempt` if it meets `budget`, with the reruns the budget does not need
/// taken out (pruneReruns) where that makes it cheaper.
static std::optional<FastAttempt>
prunedWithin(const PlanningGraph &graph, std::optional<FastAttempt> attempt,
             uint64_t budget, const MachineModel &device) {
  if (!attempt || attempt->peak > budget)
    return std::nullopt;
  std::optional<std::vector<PlanStep>> steps =
      pruneReruns(graph, attempt->steps, budget);
  if (!steps)
    return attempt;
  std::optional<FastAttempt> pruned =
      simulatedAttempt(graph, std::move(*steps), device);
  if (!pruned || pruned->peak > budget || pruned->overhead >= attempt->overhead)
    return attempt;
  pruned->evictionCosts = std::move(attempt->evictionCosts);
  return pruned;
}

/// `attempts` less those that miss `budget`, with the reruns the budget does
/// not need taken out (prunedWithin) of those that cost at most twice the
/// cheapest of them and `cheapest`, on all cores. Pruning took at most a
/// quarter of a plan's overhead on the kit, so a plan twice as dear does not
/// overtake, and pruning it would only cost time.
static void pruneNearCheapest(
    const PlanningGraph &graph, std::vector<std::optional<FastAttempt>> &attempts,
    uint64_t budget, const MachineModel &device,
    double cheapest = std::numeric_limits<double>::infinity()) {
  for (std::optional<FastAttempt> &attempt : attempts) {
    if (attempt && attempt->peak > budget)
      attempt.reset();
    if (attempt)
      cheapest = std::min(cheapest, attempt->overhead);
  }
  constexpr double kPruneWindow = 2;
  llvm::parallelFor(0, attempts.size(), [&](size_t i) {
    if (attempts[i] && attempts[i]->overhead <= kPruneWindow * cheapest)
      attempts[i] = prunedWithin(graph, std::move(attempts[i]), budget, device);
  });
}

/// The plain replay at `budget` or, when it runs into a dead end, the guided
/// one; failing both, with `boundedFallback`, the same two with short
/// rebuilds only.
static std::optional<FastAttempt>
attemptPlainOrGuided(const PlanningGraph &graph, uint64_t budget,
                     const MachineModel &device, bool dropsAhead,
                     const std::vector<bool> &startOnHost,
                     bool boundedFallback) {
  std::optional<DropSelection> selection;
  auto plainOrGuided =
      [&](LongRebuilds longRebuilds) -> std::optional<FastAttempt> {
    if (std::optional<FastAttempt> attempt = attemptFast(
            graph, budget, device, startOnHost, std::nullopt, longRebuilds))
      return attempt;
    if (!dropsAhead)
      return std::nullopt;
    if (!selection)
      selection.emplace(graph, device, budget, /*earlyReruns=*/false);
    return attemptFast(graph, budget, device, startOnHost,
                       GuidingDrops{*selection, DropRanking{}}, longRebuilds);
  };
  if (std::optional<FastAttempt> attempt =
          plainOrGuided(LongRebuilds::CostTheWalk))
    return attempt;
  if (!boundedFallback)
    return std::nullopt;
  return plainOrGuided(LongRebuilds::Refuse);
}

/// The attempt with the lowest peak the fast planner finds at or below
/// `ceiling` with the persistent tensors `startOnHost` marks in host memory:
/// a bisection over budgets between memoryLowerBound and the ceiling (to
/// 0.1%), after a scan, in which a met budget moves the upper end down to
/// the peak its plan reached. Greedy eviction is not monotone in the budget (a
/// tighter budget can succeed where a looser one ran into a dead end), and a
/// plan fits every budget above its peak, so the peaks are what count.
static std::optional<FastAttempt>
lowestFastAttempt(const PlanningGraph &graph, const MachineModel &device,
                  uint64_t ceiling, const std::vector<bool> &startOnHost,
                  bool dropsAhead) {
  uint64_t low = memoryLowerBound(graph, llvm::is_contained(startOnHost, true));
  std::optional<FastAttempt> best;
  auto attemptAt = [&](uint64_t budget) -> std::optional<FastAttempt> {
    std::optional<FastAttempt> attempt =
        attemptPlainOrGuided(graph, budget, device, dropsAhead, startOnHost,
                             /*boundedFallback=*/true);
    if (!attempt || attempt->peak > budget)
      return std::nullopt;
    return attempt;
  };
  auto keepLowest = [&](std::optional<FastAttempt> attempt) {
    if (!attempt)
      return false;
    if (!best || attempt->peak < best->peak)
      best = std::move(attempt);
    return true;
  };
  auto fits = [&](uint64_t budget) { return keepLowest(attemptAt(budget)); };
  if (fits(low))
    return best;
  if (!fits(ceiling))
    return std::nullopt;
  // A scan first: replays are not monotone in the budget, and a bisection
  // alone can step over the targets a low plan comes from.
  constexpr unsigned kScan = 32;
  uint64_t top = best->peak;
  for (std::optional<FastAttempt> &attempt :
       attemptEach(kScan - 1, [&](size_t i) {
         return attemptAt(top - (top - low) / kScan * (i + 1));
       }))
    keepLowest(std::move(attempt));
  // Invariant: low does not fit, best->peak fits.
  uint64_t high = best->peak;
  while (high > low && high - low > std::max<uint64_t>(1, high / 1000)) {
    uint64_t mid = low + (high - low) / 2;
    if (fits(mid))
      high = best->peak;
    else
      low = mid;
  }
  return best;
}

/// The persistent tensors the caller could keep in host memory on `device`,
/// in the order the planner moves them there: the ones read by the fewest
/// ops first (optimizer state, read once by the update, before parameters),
/// larger first among those.
static std::vector<TensorId> hostCandidates(const PlanningGraph &graph,
                                            const MachineModel &device) {
  std::vector<TensorId> candidates;
  if (!device.canOffload())
    return candidates;
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    if (graph.isPersistent(t) && tensor.offloadable && tensor.bytes > 0 &&
        !tensor.consumers.empty())
      candidates.push_back(t);
  llvm::stable_sort(candidates, [&](TensorId a, TensorId b) {
    const PlanTensor &x = graph.tensor(a), &y = graph.tensor(b);
    if (x.consumers.size() != y.consumers.size())
      return x.consumers.size() < y.consumers.size();
    return x.bytes > y.bytes;
  });
  return candidates;
}

/// By TensorId: the first `count` of `candidates`.
static std::vector<bool> firstOnHost(const PlanningGraph &graph,
                                     llvm::ArrayRef<TensorId> candidates,
                                     size_t count) {
  std::vector<bool> onHost(graph.numTensors(), false);
  for (TensorId t : candidates.take_front(count))
    onHost[t] = true;
  return onHost;
}

/// A ceiling every graph's fast plan meets: room for every tensor at once,
/// so nothing is ever evicted.
static uint64_t allTensorBytes(const PlanningGraph &graph) {
  uint64_t bytes = 0;
  for (const PlanTensor &tensor : graph.tensors())
    bytes += tensor.bytes;
  return bytes;
}

/// `lowest`, a recompute-only attempt over `budget`, planned again as a
/// graph of its own (buildRunGraph), aimed at `budget` and at a few peaks
/// a little below its own, keeping the lowest peak reached; and so on while
/// the peak comes down. The reruns of one round are ops the next round can
/// drop around, and what they hold (the inputs a rebuild needs) is in that
/// round's live bytes, which the next drop selection covers.
static std::optional<FastAttempt> descendToBudget(const PlanningGraph &graph,
                                                  uint64_t budget,
                                                  const MachineModel &device,
                                                  bool dropsAhead,
                                                  FastAttempt lowest) {
  // Rounds past the third lowered the peak by under 1% on the random
  // layered graphs; steps of more than a fifth were never met.
  constexpr unsigned kRounds = 4;
  constexpr double kSteps[] = {0.98, 0.95, 0.9, 0.8};
  uint64_t floor = std::max(budget, memoryLowerBound(graph));
  for (unsigned round = 0; round < kRounds && lowest.peak > floor; ++round) {
    RunGraph runGraph = buildRunGraph(graph, getOpRuns(lowest.steps));
    std::vector<uint64_t> targets = {floor};
    for (double step : kSteps)
      if (uint64_t target = lowest.peak * step; target > floor)
        targets.push_back(target);
    std::optional<FastAttempt> lower;
    for (std::optional<FastAttempt> &attempt :
         attemptEach(targets.size(), [&](size_t i) {
           return attemptPlainOrGuided(runGraph.graph, targets[i], device,
                                       dropsAhead, {},
                                       /*boundedFallback=*/true);
         })) {
      if (!attempt)
        continue;
      std::optional<std::vector<PlanStep>> steps =
          mapToOriginal(graph, runGraph, attempt->steps);
      if (!steps)
        continue;
      std::optional<FastAttempt> mapped =
          simulatedAttempt(graph, std::move(*steps), device);
      if (mapped && mapped->peak < (lower ? lower->peak : lowest.peak))
        lower = std::move(mapped);
    }
    if (!lower)
      break;
    lowest = std::move(*lower);
  }
  if (lowest.peak > budget)
    return lowest;
  return prunedWithin(graph, std::move(lowest), budget, device);
}

/// Which of `runs` go when the rerun at index `ruined` goes: it, and every
/// rerun then left without a reader (nothing left reads what it made before
/// its op runs again, and it makes no graph output's last instance).
static std::vector<bool> ruinRerun(const PlanningGraph &graph,
                                   llvm::ArrayRef<OpId> runs, size_t ruined) {
  std::vector<bool> rerun(runs.size()), ran(graph.numOps(), false);
  for (auto [i, op] : llvm::enumerate(runs)) {
    rerun[i] = ran[op];
    ran[op] = true;
  }
  std::vector<bool> gone(runs.size(), false);
  gone[ruined] = true;
  // Whether a run after the one at hand, left in, reads the instance of the
  // tensor that is current there.
  std::vector<bool> readLater(graph.numTensors());
  for (TensorId t = 0; t < graph.numTensors(); ++t)
    readLater[t] = graph.mustStayResident(t);
  for (size_t i = runs.size(); i-- > 0;) {
    const PlanOp &op = graph.op(runs[i]);
    if (rerun[i] && llvm::none_of(op.outputs, [&](TensorId output) {
          return readLater[output];
        }))
      gone[i] = true;
    if (gone[i])
      continue;
    for (TensorId output : op.outputs)
      readLater[output] = false;
    for (TensorId input : op.inputs)
      readLater[input] = true;
  }
  return gone;
}

/// A cheaper recompute-only program than `best` within `budget`, if ruin
/// and repair finds one (a large-neighbourhood search): a rerun goes with
/// the reruns that only fed it, the instance its readers then read is
/// kept (not recomputable in the run graph, so the repair cannot take the
/// same way back), the rest is planned again as a graph of its runs
/// (buildRunGraph, attemptPlainOrGuided) and mapped back and pruned. Per
/// round, the costliest reruns not ruined before are each ruined and
/// repaired on all cores, and the cheapest result that beats `best` is
/// taken. The greedy planners commit to a rebuild chain once; ruining it
/// lets the others' reruns cover its stretch instead.
static FastAttempt repairedCheaper(const PlanningGraph &graph, uint64_t budget,
                                   const MachineModel &device, bool dropsAhead,
                                   FastAttempt best) {
  constexpr unsigned kRounds = 8, kRuinsPerRound = 4;
  // A repair plans about as many ops as the program runs; at most this many
  // run-ops of repairs per search, so that it costs a few plans of the
  // graph at most (fewer rounds past 1k runs, none past 8k). Rounds that
  // find nothing are no sign that later ones will not: on the published
  // random layered n100 the cheaper plans come in the third round and later.
  constexpr size_t kRepairWork = size_t(1) << 15;
  if (!isRunSequence(best.steps))
    return best;
  // A repair with host copies could not be mapped back.
  MachineModel recomputeOnly = device.withoutHostLink();
  size_t rounds = std::min<size_t>(kRounds, kRepairWork / kRuinsPerRound /
                                                getOpRuns(best.steps).size());
  // By op and which of its runs: ruined before.
  std::set<std::pair<OpId, unsigned>> ruinedBefore;
  for (unsigned round = 0; round < rounds; ++round) {
    std::vector<OpId> runs = getOpRuns(best.steps);
    std::vector<unsigned> runsOf(graph.numOps(), 0);
    std::vector<std::pair<size_t, unsigned>> reruns;
    for (auto [i, op] : llvm::enumerate(runs))
      if (runsOf[op]++)
        reruns.push_back({i, runsOf[op] - 1});
    llvm::stable_sort(reruns, [&](const auto &a, const auto &b) {
      return graph.op(runs[a.first]).cost > graph.op(runs[b.first]).cost;
    });
    std::vector<size_t> ruins;
    for (auto [index, which] : reruns) {
      if (ruins.size() == kRuinsPerRound)
        break;
      if (ruinedBefore.insert({runs[index], which}).second)
        ruins.push_back(index);
    }
    if (ruins.empty())
      break;
    std::vector<std::optional<FastAttempt>> repairs =
        attemptEach(ruins.size(), [&](size_t k) -> std::optional<FastAttempt> {
          size_t ruined = ruins[k];
          std::vector<bool> gone = ruinRerun(graph, runs, ruined);
          std::vector<OpId> left;
          llvm::SmallVector<size_t, 1> kept;
          for (auto [i, op] : llvm::enumerate(runs)) {
            if (gone[i])
              continue;
            if (i < ruined && op == runs[ruined])
              kept.assign({left.size()});
            left.push_back(op);
          }
          RunGraph runGraph = buildRunGraph(graph, left, kept);
          std::optional<FastAttempt> repair = attemptPlainOrGuided(
              runGraph.graph, budget, recomputeOnly, dropsAhead, {},
              /*boundedFallback=*/true);
          if (!repair || repair->peak > budget)
            return std::nullopt;
          std::optional<std::vector<PlanStep>> steps =
              mapToOriginal(graph, runGraph, repair->steps);
          if (!steps)
            return std::nullopt;
          return prunedWithin(
              graph, simulatedAttempt(graph, std::move(*steps), device), budget,
              device);
        });
    std::optional<FastAttempt> cheapest;
    for (std::optional<FastAttempt> &repair : repairs)
      if (repair &&
          repair->overhead < (cheapest ? cheapest->overhead : best.overhead))
        cheapest = std::move(repair);
    if (cheapest)
      best = std::move(*cheapest);
  }
  return best;
}

/// The plan that rebuilds every input from nothing (RebuildCeiling.h), with
/// the reruns its own peak does not need taken out; none past 2^16 runs.
/// On small graphs of wide fan-in it goes lower than every replay (2 of 120
/// random 10-50-op DAGs), and pruning leaves few of its reruns (27,608 runs
/// of 27 ops -> 89% overhead).
static std::optional<FastAttempt>
rebuiltFromNothing(const PlanningGraph &graph, const MachineModel &device) {
  constexpr size_t kMaxRuns = size_t(1) << 16;
  std::optional<std::vector<OpId>> runs =
      rebuildFromNothingRuns(graph, kMaxRuns);
  if (!runs)
    return std::nullopt;
  std::optional<FastAttempt> rebuilt =
      simulatedAttempt(graph, insertFrees(graph, *runs), device);
  if (!rebuilt)
    return std::nullopt;
  uint64_t peak = rebuilt->peak;
  return prunedWithin(graph, std::move(rebuilt), peak, device);
}

/// The lowest peak the fast planner finds, with every candidate for host
/// memory there, and a recompute-only program's peak brought down further
/// (descendToBudget) until it meets `target`.
static std::optional<FastAttempt> lowestFastAttempt(const PlanningGraph &graph,
                                                    const MachineModel &device,
                                                    bool dropsAhead,
                                                    uint64_t target) {
  std::vector<TensorId> candidates = hostCandidates(graph, device);
  std::optional<FastAttempt> lowest = lowestFastAttempt(
      graph, device, allTensorBytes(graph),
      firstOnHost(graph, candidates, candidates.size()), dropsAhead);
  if (std::optional<FastAttempt> rebuilt = rebuiltFromNothing(graph, device);
      rebuilt && (!lowest || rebuilt->peak < lowest->peak))
    lowest = std::move(rebuilt);
  if (lowest && lowest->peak <= target)
    return prunedWithin(graph, std::move(lowest), target, device);
  // With a host link the rounds' plans move tensors to the host, which a
  // run graph's program cannot map back.
  if (!lowest || device.canOffload())
    return lowest;
  return descendToBudget(graph, target, device, dropsAhead, std::move(*lowest));
}

uint64_t vram::planner::smallestFastBudget(const PlanningGraph &graph,
                                           const MachineModel &device) {
  std::optional<FastAttempt> best = lowestFastAttempt(
      graph, device, /*dropsAhead=*/true, memoryLowerBound(graph));
  return best ? best->peak : allTensorBytes(graph);
}

/// Hands what the replay weighed to the decisions of the tensors the plan
/// evicts.
static llvm::Expected<Plan> buildFastPlan(const PlanningGraph &graph,
                                          FastAttempt attempt,
                                          const MachineModel &device) {
  llvm::Expected<Plan> plan =
      buildPlan(graph, std::move(attempt.steps), device);
  if (plan)
    for (auto [decision, cost] :
         llvm::zip(plan->decisions, attempt.evictionCosts))
      if (!decision.isKept())
        decision.eviction = cost;
  return plan;
}

/// The fast planner's attempt for `budget`: the cheapest of the plan aimed
/// at it, those guided by drops chosen ahead (one per ranking tried), the
/// plain one with long rebuilds priced to the walk's frontier and, when the
/// first runs into a dead end, the first met of seven evenly spaced lower
/// targets (attemptPlainOrGuided) down to the lower bound. Then, with a host
/// link, the plan that keeps the fewest persistent tensors in host memory
/// (hostCandidates' order; doubling, then bisection on how many). Then the
/// first portfolio again with short rebuilds only (LongRebuilds::Refuse).
/// Failing those, the lowest peak the planner finds at all, which the caller
/// compares with the budget.
static std::optional<FastAttempt> fastAttemptWithin(const PlanningGraph &graph,
                                                    uint64_t budget,
                                                    const MachineModel &device,
                                                    bool dropsAhead) {
  std::optional<FastAttempt> best;
  auto consider = [&](std::optional<FastAttempt> attempt) {
    if (attempt && (!best || attempt->overhead < best->overhead))
      best = std::move(attempt);
  };
  std::vector<DropRanking> rankings;
  // The exponents of selectDrops' ranking tried. The greedy cover is
  // sensitive to it, and not monotonically: on the kit's training steps at
  // 50% of their peaks the cheapest plans come from 0.5 (DenseNet-121), 0.8
  // (ResNet-50), 1 and 1.5 (EfficientNet-B0), up to a quarter cheaper than
  // the others'; on random layered graphs from 2 to 6 (500 ops at 70%:
  // 26.5% against 44.9% with the four below 2). Each ranks once with the
  // early reruns and once without: weighing them changes what the greedy
  // takes first, for better on random layered graphs (500 ops at 70%:
  // 22.8%), for worse on some Checkmate graphs.
  constexpr double kExcessExponents[] = {1.0, 0.5, 0.8, 1.5,
                                         2.0, 3.0, 4.0, 6.0};
  if (dropsAhead)
    for (bool earlyReruns : {false, true})
      for (double exponent : kExcessExponents)
        rankings.push_back(DropRanking{exponent, earlyReruns});
  // The plain replay first, then one guided by the drops of each ranking,
  // all selected from one start, and, unless long rebuilds are refused, the
  // plain one with them priced to the walk's frontier. Returns whether the
  // plain one met the budget.
  std::optional<DropSelection> selection;
  if (dropsAhead)
    selection.emplace(graph, device, budget, /*earlyReruns=*/true);
  auto attemptPortfolio = [&](LongRebuilds longRebuilds) {
    bool withFrontier = longRebuilds != LongRebuilds::Refuse;
    std::vector<std::optional<FastAttempt>> attempts =
        attemptEach(1 + rankings.size() + withFrontier, [&](size_t i) {
          if (i == 0)
            return attemptFast(graph, budget, device, {}, std::nullopt,
                               longRebuilds);
          if (i > rankings.size())
            return attemptFast(graph, budget, device, {}, std::nullopt,
                               LongRebuilds::CostTheFrontier);
          return attemptFast(graph, budget, device, {},
                             GuidingDrops{*selection, rankings[i - 1]},
                             longRebuilds);
        });
    pruneNearCheapest(graph, attempts, budget, device);
    bool plainMet = attempts.front().has_value();
    for (std::optional<FastAttempt> &attempt : attempts)
      consider(std::move(attempt));
    return plainMet;
  };
  bool aimedMet = attemptPortfolio(LongRebuilds::CostTheWalk);
  // Where the plain replay runs into a dead end, one aimed lower can still
  // cost less than the guided one.
  uint64_t low = memoryLowerBound(graph);
  constexpr unsigned kProbes = 8;
  for (unsigned i = 1; !aimedMet && budget > low && i < kProbes; ++i)
    if (std::optional<FastAttempt> attempt = attemptPlainOrGuided(
            graph, budget - (budget - low) / kProbes * i, device, dropsAhead,
            {}, /*boundedFallback=*/false)) {
      consider(prunedWithin(graph, std::move(attempt), budget, device));
      break;
    }
  if (best)
    return best;

  std::vector<TensorId> candidates = hostCandidates(graph, device);
  auto withOnHost = [&](size_t count) {
    return attemptFast(graph, budget, device,
                       firstOnHost(graph, candidates, count));
  };
  // Invariant: `failed` tensors on host do not meet the budget.
  size_t failed = 0;
  std::optional<FastAttempt> met;
  size_t count = 1;
  for (; count < candidates.size(); count *= 2) {
    if ((met = withOnHost(count)))
      break;
    failed = count;
  }
  if (!met && !candidates.empty()) {
    count = candidates.size();
    met = withOnHost(count);
  }
  if (met) {
    while (count - failed > 1) {
      size_t mid = failed + (count - failed) / 2;
      if (std::optional<FastAttempt> attempt = withOnHost(mid)) {
        met = std::move(attempt);
        count = mid;
      } else {
        failed = mid;
      }
    }
    return met;
  }
  // The portfolio again with short rebuilds only: the random layered graphs
  // of 250 and 1,000 ops at 70% of their peaks are planned only so.
  attemptPortfolio(LongRebuilds::Refuse);
  if (best)
    return best;
  return lowestFastAttempt(graph, device, dropsAhead, budget);
}

llvm::Expected<Plan> vram::planner::planFast(const PlanningGraph &graph,
                                             uint64_t budget,
                                             const MachineModel &device,
                                             bool dropsAhead) {
  std::optional<FastAttempt> attempt =
      fastAttemptWithin(graph, budget, device, dropsAhead);
  if (!attempt || attempt->peak > budget)
    return llvm::make_error<BudgetTooSmallError>(
        budget, memoryFloor(graph, device.canOffload()),
        attempt ? attempt->peak : allTensorBytes(graph));
  // Greedy eviction aimed at the budget can pay more than a plan aimed
  // lower, which fits too (a tighter target sends other tensors to the host
  // or evicts earlier, where copies hide better): the cheapest of a few
  // targets between the budget and the lower bound, so that a larger budget
  // does not cost more than a smaller one the planner also tried.
  constexpr unsigned kTargets = 8;
  uint64_t low = memoryLowerBound(graph, device.canOffload());
  std::vector<std::optional<FastAttempt>> lowerAttempts =
      attemptEach(budget > low ? kTargets - 1 : 0, [&](size_t i) {
        return attemptFast(graph, budget - (budget - low) / kTargets * (i + 1),
                           device);
      });
  pruneNearCheapest(graph, lowerAttempts, budget, device, attempt->overhead);
  for (std::optional<FastAttempt> &lower : lowerAttempts)
    if (lower && lower->overhead < attempt->overhead)
      attempt = std::move(lower);
  *attempt =
      repairedCheaper(graph, budget, device, dropsAhead, std::move(*attempt));
  // A program the simulator rejects is a planner bug, reported as is.
  llvm::Expected<Plan> plan = buildFastPlan(graph, std::move(*attempt), device);
  if (!plan || !device.canOffload())
    return plan;
  // Offload decisions are greedy per eviction and can lose to recomputing
  // everything; a recompute-only plan is valid on any device, so keep
  // whichever simulates faster.
  std::optional<FastAttempt> recomputeOnly =
      fastAttemptWithin(graph, budget, device.withoutHostLink(), dropsAhead);
  if (!recomputeOnly || recomputeOnly->peak > budget)
    return plan;
  llvm::Expected<Plan> alternative =
      buildFastPlan(graph, std::move(*recomputeOnly), device);
  if (!alternative)
    return alternative.takeError();
  if (alternative->simulation.overhead() < plan->simulation.overhead())
    return alternative;
  return plan;
}
