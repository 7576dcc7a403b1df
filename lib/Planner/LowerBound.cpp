//===- LowerBound.cpp - Interval-drop bound on the recompute cost ---------===//
//
// Any recompute-only plan that keeps the schedule runs op t for the first
// time with everything it touches resident, and with every other tensor that
// is alive across t (produced before t, read after t) either resident or
// absent. An absent tensor x whose next read after t is c must be rebuilt
// before c, by a rerun of its producer after the first run of t. Take the
// consecutive uses of x (its producer, then its readers) as gaps: one rerun
// inside a gap can cover every op of that gap, and reruns for different gaps
// are different runs, since first runs follow the schedule. So choosing, per
// gap, whether x is dropped there (cost: one run of its producer) subject to
// "what stays alive across t fits beside what t touches", for every t, is a
// relaxation: every plan gives a feasible choice costing at most the plan's
// recompute time.
//
// The cascade of dead inputs is modelled: the rerun needs the producer's
// inputs, and every input the schedule no longer keeps by then (the producer
// was its last reader) is either still resident wherever x is absent, which
// eats into what dropping x saves, or rebuilt inside the gap by a rerun of its
// own producer (e.g. a ReLU output is rebuilt from the batch norm before it; a
// weight gradient waiting for the update needs both the activation and the
// output gradient it was made from), and so on for the rebuilt input's
// producer, a few levels deep. Below that the memory of the reruns and of the
// inputs they need is ignored, and so are inputs that die inside a gap, which
// is where it is loose. What a plan keeps at any moment of the gap is a cut
// of that tree of inputs (every path from x down to the depth limit passes a
// resident tensor), so its saving there is at most what the lightest of
// those cuts saves, at most the reruns the plan pays: choosing that cut
// keeps the choice a relaxation. The choice is an integer program with one
// binary per gap that matters and one per input it may rebuild; the solver's
// optimum, or its best bound when it runs out of time, bounds the real
// optimum from below.
//
//===----------------------------------------------------------------------===//

#include "MilpModel.h"

#include "vram/Planner/Planners.h"

#include <chrono>
#include <cmath>
#include <functional>

using namespace vram::planner;
using namespace vram::planner::detail;

llvm::Expected<RecomputeBound>
vram::planner::recomputeLowerBound(const PlanningGraph &graph, uint64_t budget,
                                   const MilpOptions &options) {
  auto startTime = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         startTime)
        .count();
  };
  size_t n = graph.numOps();
  if (budget == 0)
    return llvm::createStringError("the relaxation needs a non-zero budget");
  RecomputeBound result;

  // Bytes that are resident while op t first runs in every plan: what t
  // touches, persistent tensors once they exist, and tensors alive across t
  // that no recomputation can rebuild.
  std::vector<double> required(n), droppableBytes(n);
  for (OpId t = 0; t < n; ++t)
    required[t] = graph.bytesTouchedBy(t);

  // A gap of tensor x: ops strictly between two consecutive uses of x.
  struct Gap {
    TensorId tensor;
    OpId first, last;
  };
  std::vector<Gap> gaps;
  auto canDrop = [&](TensorId x) {
    return graph.canRecompute(x) && !graph.mustStayResident(x);
  };
  // A rerun rebuilds all outputs of its op, so each droppable output is
  // charged its share of the op's cost (outputs that are never dropped claim
  // none).
  auto rerunShare = [&](OpId op) {
    const PlanOp &producer = graph.op(op);
    return producer.cost / llvm::count_if(producer.outputs, canDrop);
  };
  for (auto [x, tensor] : llvm::enumerate(graph.tensors())) {
    double bytes = tensor.bytes;
    int64_t born = tensor.producer ? int64_t(*tensor.producer) : -1;
    if (graph.isPersistent(x)) {
      for (int64_t t = born + 1; t < int64_t(n); ++t)
        required[t] += bytes;
      continue;
    }
    // Outputs stay to the end; anything else is needed until its last read.
    int64_t until =
        tensor.category == TensorCategory::Output
            ? int64_t(n) - 1
            : (tensor.consumers.empty() ? born
                                        : int64_t(tensor.consumers.back()));
    bool droppable = canDrop(x);
    int64_t previousUse = born;
    auto addGap = [&](int64_t after, int64_t before) {
      if (before - after < 2)
        return;
      for (int64_t t = after + 1; t < before; ++t)
        (droppable ? droppableBytes : required)[t] += bytes;
      if (droppable)
        gaps.push_back({TensorId(x), OpId(after + 1), OpId(before - 1)});
    };
    for (OpId reader : tensor.consumers) {
      addGap(previousUse, reader);
      previousUse = reader;
    }
    if (until > previousUse)
      addGap(previousUse, until + 1);
  }

  // need[t]: bytes that must be absent while t runs, as a fraction of the
  // budget; more than all droppable bytes proves the budget impossible.
  std::vector<double> need(n);
  bool anyNeed = false;
  for (OpId t = 0; t < n; ++t) {
    double excess = required[t] + droppableBytes[t] - double(budget);
    if (excess <= 0)
      continue;
    if (excess > droppableBytes[t]) {
      result.infeasible = true;
      result.solveSeconds = elapsed();
      return result;
    }
    need[t] = excess / double(budget);
    anyNeed = true;
  }
  if (!anyNeed) {
    result.exact = true;
    result.solveSeconds = elapsed();
    return result;
  }

  // The inputs of x's producer that the producer reads last, so that they
  // are dead throughout x's gaps (an op reading one earlier, as a forward
  // layer reads the activation its weight gradient reads again, does not
  // matter), where the producer has no other output (so no other gap
  // variable counts an input's bytes at the same op).
  auto deadInputs = [&](TensorId x) {
    llvm::SmallVector<TensorId, 2> dead;
    OpId producerId = *graph.tensor(x).producer;
    const PlanOp &producer = graph.op(producerId);
    if (producer.outputs.size() != 1)
      return dead;
    for (TensorId input : producer.inputs) {
      const PlanTensor &candidate = graph.tensor(input);
      if (!graph.isPersistent(input) && !graph.mustStayResident(input) &&
          candidate.category != TensorCategory::Output &&
          candidate.consumers.back() == producerId &&
          !llvm::is_contained(dead, input))
        dead.push_back(input);
    }
    return dead;
  };

  // Per gap that crosses an op with a need: a binary "x is absent somewhere
  // in the gap and its producer reruns there", which keeps every dead input
  // of that producer resident (saves bytes(x) less theirs), and per dead
  // input that can be rebuilt a binary "rebuilt inside the gap" (gives its
  // bytes back, pays its share of a rerun), chosen only with the one above
  // it and expanded alike, kCascadeDepth levels deep. An input that cannot be
  // rebuilt stays.
  MilpModel milp;
  std::vector<llvm::SmallVector<std::pair<int, double>>> rows(n);
  double costUnit = solverCostUnit(graph.totalCost(), n);
  auto addDrop = [&](const Gap &gap, double cost, double savedBytes) {
    int column = milp.addBinary(cost / costUnit);
    for (OpId t = gap.first; t <= gap.last; ++t)
      if (need[t] > 0)
        rows[t].push_back({column, savedBytes / double(budget)});
    return column;
  };
  constexpr unsigned kCascadeDepth = 4;
  // The column of `x` rebuilt within `gap`, `depth` levels below the gap's
  // tensor; none when nothing under it can save bytes.
  std::function<std::optional<int>(TensorId, const Gap &, unsigned)>
      addRebuild = [&](TensorId x, const Gap &gap,
                       unsigned depth) -> std::optional<int> {
    const PlanTensor &tensor = graph.tensor(x);
    llvm::SmallVector<TensorId, 2> dead;
    if (depth < kCascadeDepth)
      dead = deadInputs(x);
    double keptBytes = 0, stuckBytes = 0;
    for (TensorId input : dead) {
      keptBytes += graph.tensor(input).bytes;
      if (!canDrop(input))
        stuckBytes += graph.tensor(input).bytes;
    }
    // What stays however the inputs come back outweighs x.
    if (double(tensor.bytes) <= stuckBytes)
      return std::nullopt;
    int column = addDrop(gap, rerunShare(*tensor.producer),
                         double(tensor.bytes) - keptBytes);
    for (TensorId input : dead)
      if (canDrop(input))
        if (std::optional<int> rebuilt = addRebuild(input, gap, depth + 1))
          milp.addRow({{*rebuilt, 1.0}, {column, -1.0}}, -kNoLimit, 0);
    return column;
  };
  for (const Gap &gap : gaps) {
    bool useful = false;
    for (OpId t = gap.first; t <= gap.last && !useful; ++t)
      useful = need[t] > 0;
    if (useful)
      (void)addRebuild(gap.tensor, gap, 0);
  }
  for (OpId t = 0; t < n; ++t)
    if (need[t] > 0)
      milp.addRow(rows[t], need[t], kNoLimit);

  double remaining = std::max(0.0, options.timeLimitSeconds - elapsed());
  MilpSolution solution = milp.solve(remaining);
  result.solveSeconds = elapsed();
  if (solution.status == MilpSolution::Status::Infeasible) {
    // Every gap dropped meets every row, so this is a solver failure.
    return llvm::createStringError(
        "HiGHS reports the interval-drop relaxation infeasible");
  }
  result.exact = solution.status == MilpSolution::Status::Optimal;
  double bound = solution.bestBound;
  // The solver's tolerances may round a bound up by a hair; keep it a bound.
  result.extraCost =
      std::isfinite(bound) ? std::max(0.0, bound * costUnit * (1 - 1e-9)) : 0.0;
  return result;
}
