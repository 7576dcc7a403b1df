//===- RerunPruning.cpp - reruns a plan does not need ---------------------===//
//
// The fast planner evicts as memory runs out and chooses its drops ahead
// greedily, so its programs rerun ops that the budget does not need once
// the other reruns are in place: ResNet-50's Adam step at half its peak
// keeps 50 of its 169 reruns' tensors without passing the budget. Taking a
// rerun out keeps the tensor's earlier instance until the rerun's readers
// (more bytes between that instance's last read and the rerun) and lets the
// inputs the rerun read last go after their previous read (fewer bytes
// there); nothing else changes. The reruns that made only what the rerun
// (and others of them) read lose their readers, so they go with it, checked
// as one change: alone the rerun often cannot go, since the rebuild chain
// and the dead inputs held for it still run beside what is kept instead.
// The live bytes of the program insertFrees builds are kept in a segment
// tree, so each rerun is checked and taken out in a few logarithmic steps
// per run that goes, the costliest first.
//
//===----------------------------------------------------------------------===//

#include "RerunPruning.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace vram::planner;

namespace {
/// Max over a range and add to a range, both in O(log n).
class RangeMax {
public:
  explicit RangeMax(llvm::ArrayRef<int64_t> values)
      : size(values.size()), max(4 * std::max<size_t>(1, size), 0),
        pending(max.size(), 0) {
    if (size)
      build(1, 0, size - 1, values);
  }
  /// Max over [first, last]; INT64_MIN when empty.
  int64_t query(int64_t first, int64_t last) const {
    if (first > last || !size)
      return INT64_MIN;
    return query(1, 0, size - 1, first, last);
  }
  void add(int64_t first, int64_t last, int64_t delta) {
    if (first <= last && size)
      add(1, 0, size - 1, first, last, delta);
  }

private:
  void build(size_t node, int64_t lo, int64_t hi,
             llvm::ArrayRef<int64_t> values) {
    if (lo == hi) {
      max[node] = values[lo];
      return;
    }
    int64_t mid = (lo + hi) / 2;
    build(2 * node, lo, mid, values);
    build(2 * node + 1, mid + 1, hi, values);
    max[node] = std::max(max[2 * node], max[2 * node + 1]);
  }
  int64_t query(size_t node, int64_t lo, int64_t hi, int64_t first,
                int64_t last) const {
    if (last < lo || hi < first)
      return INT64_MIN;
    if (first <= lo && hi <= last)
      return max[node];
    int64_t mid = (lo + hi) / 2;
    int64_t below = std::max(query(2 * node, lo, mid, first, last),
                             query(2 * node + 1, mid + 1, hi, first, last));
    return below == INT64_MIN ? below : below + pending[node];
  }
  void add(size_t node, int64_t lo, int64_t hi, int64_t first, int64_t last,
           int64_t delta) {
    if (last < lo || hi < first)
      return;
    if (first <= lo && hi <= last) {
      max[node] += delta;
      pending[node] += delta;
      return;
    }
    int64_t mid = (lo + hi) / 2;
    add(2 * node, lo, mid, first, last, delta);
    add(2 * node + 1, mid + 1, hi, first, last, delta);
    max[node] = std::max(max[2 * node], max[2 * node + 1]) + pending[node];
  }

  size_t size;
  /// Per node: the max of its range, with the adds of the node and below.
  std::vector<int64_t> max;
  /// Per node: added to its whole range, not passed down.
  std::vector<int64_t> pending;
};

/// The program of a sequence of op runs as insertFrees builds it, with runs
/// taken out one at a time: every tensor instance (one per run that makes
/// it) and its reads, in run order, and the live bytes while each run runs.
class RunSequence {
public:
  /// None when insertFrees' program for `runs` is not valid.
  static std::optional<RunSequence> build(const PlanningGraph &graph,
                                          std::vector<OpId> runs);

  /// Run `r` and the reruns left with no reader when it goes: those whose
  /// every made instance is read only by runs of the set (a rebuild chain
  /// that only fed r). Latest first, r at the front. Empty when r makes a
  /// first instance or an instance in an input's storage.
  llvm::SmallVector<size_t, 4> rebuildOf(size_t r) const;
  /// Whether the runs of `rebuild` (rebuildOf) can go together within
  /// `budget`: see the file comment.
  bool canDrop(llvm::ArrayRef<size_t> rebuild, uint64_t budget) const;
  /// Takes out the runs of `rebuild`, latest first.
  void drop(llvm::ArrayRef<size_t> rebuild);
  /// The runs left.
  std::vector<OpId> runs() const;

private:
  struct Instance {
    /// The run that makes it; -1: it exists before the first run.
    int64_t made;
    /// Its first and last read (indices into `reads`); -1: none.
    int64_t firstRead = -1, lastRead = -1;
    /// The instance of the same tensor made next; -1: none.
    int64_t next = -1;
  };
  struct Read {
    TensorId tensor;
    size_t instance;
    size_t run;
    /// The reads of the same instance before and after; -1: none.
    int64_t previous = -1, next = -1;
  };
  /// A tensor a run makes: the instance before it (-1: none) and its own.
  struct Made {
    TensorId tensor;
    int64_t previous;
    size_t instance;
  };
  /// (first run, last run, bytes added to the runs between).
  using Change = std::tuple<int64_t, int64_t, int64_t>;

  RunSequence(const PlanningGraph &graph, std::vector<OpId> runs,
              llvm::ArrayRef<int64_t> live)
      : graph(&graph), sequence(std::move(runs)), live(live),
        readsOf(sequence.size()), madeBy(sequence.size()),
        dropped(sequence.size(), false) {}
  /// The run that last touched `instance`: its last read, else its maker.
  int64_t lastTouch(const Instance &instance) const {
    return instance.lastRead < 0 ? instance.made
                                 : int64_t(reads[instance.lastRead].run);
  }
  /// Whether run `r` is a rerun that this bookkeeping can take out: it
  /// makes no first instance, and nothing in an input's storage (that takes
  /// the input's instance, which is not followed here).
  bool isRemovableRerun(size_t r) const;
  /// What taking the runs of `rebuild` out changes in the live bytes of the
  /// other runs.
  llvm::SmallVector<Change, 6>
  changesOfDropping(llvm::ArrayRef<size_t> rebuild) const;
  void dropOne(size_t r);

  const PlanningGraph *graph;
  std::vector<OpId> sequence;
  /// Live bytes per run; a dropped run's are out of range below.
  RangeMax live;
  std::vector<Instance> instances;
  std::vector<Read> reads;
  std::vector<llvm::SmallVector<size_t, 4>> readsOf;
  std::vector<llvm::SmallVector<Made, 1>> madeBy;
  std::vector<bool> dropped;
};
} // namespace

/// A live-bytes value no budget check passes or fails on: a dropped run.
constexpr int64_t kNoRun = INT64_MIN / 4;
/// The most runs one rebuild taken out at once may have: its check is
/// quadratic in them.
constexpr size_t kMaxRebuild = 64;

std::optional<RunSequence> RunSequence::build(const PlanningGraph &graph,
                                              std::vector<OpId> runs) {
  std::vector<PlanStep> steps = insertFrees(graph, runs);
  llvm::Expected<SimulationResult> simulation =
      simulate(graph, steps, MachineModel());
  if (!simulation) {
    llvm::consumeError(simulation.takeError());
    return std::nullopt;
  }
  RunSequence result(graph, std::move(runs),
                     getComputeLiveBytes(steps, *simulation));

  std::vector<int64_t> current(graph.numTensors(), -1);
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    if (!tensor.producer) {
      current[t] = result.instances.size();
      result.instances.push_back({-1});
    }
  for (auto [r, op] : llvm::enumerate(result.sequence)) {
    for (TensorId input : graph.op(op).inputs) {
      if (current[input] < 0 ||
          llvm::any_of(result.readsOf[r], [&](size_t read) {
            return result.reads[read].tensor == input;
          }))
        continue;
      Instance &instance = result.instances[current[input]];
      Read read{input, size_t(current[input]), r, instance.lastRead};
      int64_t index = result.reads.size();
      if (instance.lastRead >= 0)
        result.reads[instance.lastRead].next = index;
      else
        instance.firstRead = index;
      instance.lastRead = index;
      result.reads.push_back(read);
      result.readsOf[r].push_back(index);
    }
    for (TensorId output : graph.op(op).outputs) {
      int64_t index = result.instances.size();
      if (current[output] >= 0)
        result.instances[current[output]].next = index;
      result.madeBy[r].push_back({output, current[output], size_t(index)});
      current[output] = index;
      result.instances.push_back({int64_t(r)});
    }
  }
  return result;
}

bool RunSequence::isRemovableRerun(size_t r) const {
  return !dropped[r] && llvm::none_of(madeBy[r], [&](const Made &output) {
    return output.previous < 0 ||
           graph->tensor(output.tensor).reusesStorageOf.has_value();
  });
}

llvm::SmallVector<size_t, 4> RunSequence::rebuildOf(size_t r) const {
  if (!isRemovableRerun(r))
    return {};
  llvm::SmallVector<size_t, 4> rebuild = {r};
  llvm::SmallDenseSet<size_t, 8> inRebuild = {r};
  auto readOnlyInRebuild = [&](size_t run) {
    return llvm::all_of(madeBy[run], [&](const Made &output) {
      for (int64_t index = instances[output.instance].firstRead; index >= 0;
           index = reads[index].next)
        if (!inRebuild.contains(reads[index].run))
          return false;
      return true;
    });
  };
  // Each run of the set has the makers of what it reads checked once it is
  // in: a maker all of whose readers join is taken when the last of them is
  // looked at.
  for (size_t next = 0; next < rebuild.size() && rebuild.size() < kMaxRebuild;
       ++next)
    for (size_t index : readsOf[rebuild[next]]) {
      int64_t maker = instances[reads[index].instance].made;
      if (maker < 0 || inRebuild.contains(maker) || !isRemovableRerun(maker) ||
          !readOnlyInRebuild(maker))
        continue;
      inRebuild.insert(maker);
      rebuild.push_back(maker);
      if (rebuild.size() == kMaxRebuild)
        break;
    }
  llvm::sort(std::next(rebuild.begin()), rebuild.end(), std::greater<>());
  return rebuild;
}

llvm::SmallVector<RunSequence::Change, 6>
RunSequence::changesOfDropping(llvm::ArrayRef<size_t> rebuild) const {
  size_t r = rebuild.front();
  llvm::SmallDenseSet<size_t, 8> inRebuild(rebuild.begin(), rebuild.end());
  llvm::SmallVector<Change, 6> changes;
  // Instances whose end no longer depends on the set's reads.
  llvm::SmallDenseSet<size_t, 8> seen;
  for (const Made &output : madeBy[r]) {
    // Read after the rerun: the earlier instance stays until then.
    if (instances[output.instance].lastRead < 0)
      continue;
    changes.push_back({lastTouch(instances[output.previous]) + 1,
                       int64_t(r) - 1,
                       int64_t(graph->tensor(output.tensor).bytes)});
    seen.insert(output.previous);
  }
  // An instance last read by the set now goes after its last read by
  // another run, or right after it is made (by the set's own runs too).
  for (size_t run : rebuild)
    for (size_t index : readsOf[run]) {
      const Read &read = reads[index];
      if (graph->mustStayResident(read.tensor) ||
          !seen.insert(read.instance).second)
        continue;
      int64_t lastInRebuild = instances[read.instance].lastRead;
      if (!inRebuild.contains(reads[lastInRebuild].run))
        continue;
      int64_t kept = lastInRebuild;
      while (kept >= 0 && inRebuild.contains(reads[kept].run))
        kept = reads[kept].previous;
      int64_t keptUntil =
          kept >= 0 ? int64_t(reads[kept].run) : instances[read.instance].made;
      changes.push_back({keptUntil + 1, int64_t(reads[lastInRebuild].run) - 1,
                         -int64_t(graph->tensor(read.tensor).bytes)});
    }
  return changes;
}

bool RunSequence::canDrop(llvm::ArrayRef<size_t> rebuild,
                          uint64_t budget) const {
  if (rebuild.empty())
    return false;
  size_t r = rebuild.front();
  llvm::SmallVector<Change, 6> changes = changesOfDropping(rebuild);
  // The runs before r in stretches of one total change each; the set's own
  // runs are stretches of their own, skipped.
  llvm::SmallVector<int64_t, 12> cuts = {int64_t(r)};
  for (auto [first, last, bytes] : changes) {
    cuts.push_back(std::max<int64_t>(0, first));
    cuts.push_back(last + 1);
  }
  for (size_t run : rebuild.drop_front()) {
    cuts.push_back(run);
    cuts.push_back(run + 1);
  }
  llvm::sort(cuts);
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    int64_t first = cuts[i], last = std::min<int64_t>(cuts[i + 1], r) - 1;
    if (first > last ||
        (first == last && llvm::is_contained(rebuild, size_t(first))))
      continue;
    int64_t total = 0;
    for (auto [from, to, bytes] : changes)
      if (from <= first && last <= to)
        total += bytes;
    if (live.query(first, last) + total > int64_t(budget))
      return false;
  }
  return true;
}

void RunSequence::drop(llvm::ArrayRef<size_t> rebuild) {
  // Latest first: a feeder has lost its readers by the time it goes.
  for (size_t run : rebuild)
    dropOne(run);
}

void RunSequence::dropOne(size_t r) {
  for (auto [first, last, bytes] : changesOfDropping({r}))
    live.add(std::max<int64_t>(0, first), last, bytes);
  live.add(r, r, kNoRun - live.query(r, r));
  dropped[r] = true;
  // Its reads leave their instances' lists.
  for (size_t index : readsOf[r]) {
    Read &read = reads[index];
    Instance &instance = instances[read.instance];
    (read.previous >= 0 ? reads[read.previous].next : instance.firstRead) =
        read.next;
    (read.next >= 0 ? reads[read.next].previous : instance.lastRead) =
        read.previous;
  }
  // What it made is the earlier instance, read on.
  for (const Made &output : madeBy[r]) {
    Instance &earlier = instances[output.previous];
    Instance &gone = instances[output.instance];
    for (int64_t index = gone.firstRead; index >= 0; index = reads[index].next)
      reads[index].instance = output.previous;
    if (gone.firstRead >= 0) {
      reads[gone.firstRead].previous = earlier.lastRead;
      (earlier.lastRead >= 0 ? reads[earlier.lastRead].next
                             : earlier.firstRead) = gone.firstRead;
      earlier.lastRead = gone.lastRead;
    }
    earlier.next = gone.next;
    if (gone.next >= 0)
      for (Made &later : madeBy[instances[gone.next].made])
        if (later.instance == size_t(gone.next))
          later.previous = output.previous;
  }
}

std::vector<OpId> RunSequence::runs() const {
  std::vector<OpId> left;
  for (auto [op, gone] : llvm::zip(sequence, dropped))
    if (!gone)
      left.push_back(op);
  return left;
}

bool vram::planner::isRunSequence(llvm::ArrayRef<PlanStep> steps) {
  return !steps.empty() && steps.front().kind == StepKind::Compute &&
         llvm::none_of(steps, [](const PlanStep &step) {
           return step.kind == StepKind::Offload ||
                  step.kind == StepKind::Prefetch;
         });
}

std::optional<std::vector<PlanStep>>
vram::planner::pruneReruns(const PlanningGraph &graph,
                           llvm::ArrayRef<PlanStep> steps, uint64_t budget) {
  if (!isRunSequence(steps))
    return std::nullopt;
  std::vector<OpId> runs;
  std::vector<size_t> reruns;
  std::vector<bool> ran(graph.numOps(), false);
  for (const PlanStep &step : steps) {
    if (step.kind != StepKind::Compute)
      continue;
    if (ran[step.id])
      reruns.push_back(runs.size());
    ran[step.id] = true;
    runs.push_back(step.id);
  }
  llvm::stable_sort(reruns, [&](size_t a, size_t b) {
    return graph.op(runs[a]).cost > graph.op(runs[b]).cost;
  });
  std::optional<RunSequence> sequence =
      RunSequence::build(graph, std::move(runs));
  if (!sequence)
    return std::nullopt;
  // Each rerun goes with the rebuild that only fed it; one that lost its
  // readers to a rerun taken out later goes in the next round.
  bool anyDropped = false;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t rerun : reruns) {
      llvm::SmallVector<size_t, 4> rebuild = sequence->rebuildOf(rerun);
      if (!sequence->canDrop(rebuild, budget))
        continue;
      sequence->drop(rebuild);
      changed = anyDropped = true;
    }
  }
  if (!anyDropped)
    return std::nullopt;
  return insertFrees(graph, sequence->runs());
}
