//===- MilpPlanner.cpp - Exact rematerialization planning with HiGHS ------===//
//
// The formulation follows Checkmate (Jain et al. 2020). Stage t ends by
// running op t for the first time and may recompute any earlier op before
// it, in schedule order. Binary R[t,i]: op i runs in stage t. Binary S[t,i]:
// op i's outputs are kept from stage t-1 into stage t. FREE[t,i,k]: op i's
// outputs are released in stage t right after op k (their last reader in the
// stage) runs. U[t,k]: bytes live while op k runs in stage t, as a fraction
// of the budget. Memory is counted per op (all outputs of an op together).
//
// FREE is continuous: each of its upper bounds is one condition (k runs,
// i is not kept, no later reader runs), so once R and S are integral the
// solver sets it to exactly 0 or 1, and it never wants less than 1 where
// 1 is allowed because freeing only lowers U.
//
//===----------------------------------------------------------------------===//

#include "MilpModel.h"

#include "vram/Planner/Planners.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace vram::planner;
using namespace vram::planner::detail;

llvm::StringRef vram::planner::stringifyMilpStatus(MilpStatus status) {
  switch (status) {
  case MilpStatus::Optimal:
    return "optimal";
  case MilpStatus::Feasible:
    return "feasible";
  case MilpStatus::NoSolution:
    return "timeout";
  case MilpStatus::Infeasible:
    return "infeasible";
  }
  llvm_unreachable("unknown MILP status");
}

namespace {
/// Lower-triangular index: (t, i) with i <= t.
size_t triangle(size_t t, size_t i) { return t * (t + 1) / 2 + i; }
} // namespace

/// The R and S values of the stage model for a recompute-only program's op
/// runs: stage t ends with the first run of op t, and op i's outputs are
/// kept into stage t when an instance made in an earlier stage is read in
/// stage t or later before i runs again. None for runs out of schedule
/// order; two runs of an op in one stage give values the solver rejects.
static std::vector<std::pair<int, double>>
getStartValues(const PlanningGraph &graph, llvm::ArrayRef<OpId> runs,
               llvm::function_ref<int(size_t, size_t)> R,
               llvm::function_ref<int(size_t, size_t)> S) {
  size_t n = graph.numOps();
  std::vector<std::vector<bool>> ran(n), kept(n);
  for (size_t t = 0; t < n; ++t) {
    ran[t].assign(t + 1, false);
    kept[t].assign(t + 1, false);
  }
  // By op: the stage its latest run is in, -1 before it runs.
  std::vector<int64_t> madeIn(n, -1);
  size_t stage = 0;
  for (OpId op : runs) {
    if (stage >= n || op > stage)
      return {};
    for (TensorId t : graph.op(op).inputs)
      if (std::optional<OpId> producer = graph.tensor(t).producer)
        for (int64_t s = madeIn[*producer] + 1; s <= int64_t(stage); ++s)
          kept[s][*producer] = true;
    ran[stage][op] = true;
    madeIn[op] = stage;
    if (op == stage)
      ++stage;
  }
  // Outputs that must stay are kept from their stage on.
  for (OpId i = 0; i < n; ++i)
    if (llvm::any_of(graph.op(i).outputs,
                     [&](TensorId t) { return graph.mustStayResident(t); }))
      for (size_t s = i + 1; s < n; ++s)
        kept[s][i] = true;
  std::vector<std::pair<int, double>> values;
  for (size_t t = 0; t < n; ++t)
    for (size_t i = 0; i <= t; ++i) {
      values.push_back({R(t, i), ran[t][i] ? 1.0 : 0.0});
      if (i < t)
        values.push_back({S(t, i), kept[t][i] ? 1.0 : 0.0});
    }
  return values;
}

llvm::Expected<MilpResult> vram::planner::planMilp(const PlanningGraph &graph,
                                                   uint64_t budget,
                                                   const MachineModel &device,
                                                   const MilpOptions &options) {
  auto startTime = std::chrono::steady_clock::now();
  size_t n = graph.numOps();
  MilpResult result;
  if (n == 0 || budget == 0)
    return llvm::createStringError("MILP needs a non-empty graph and budget");

  // Per op: bytes of its outputs as a fraction of the budget, whether it may
  // be recomputed, whether its outputs must stay once computed.
  std::vector<double> memory(n);
  std::vector<bool> recomputable(n, true), pinned(n);
  for (OpId i = 0; i < n; ++i) {
    for (TensorId t : graph.op(i).outputs) {
      if (!graph.isPersistent(t))
        memory[i] += double(graph.tensor(t).bytes) / double(budget);
      recomputable[i] = recomputable[i] && graph.canRecompute(t);
      pinned[i] = pinned[i] || graph.mustStayResident(t);
    }
  }
  // Tensors without a producer stay resident while anything may need them.
  std::vector<int64_t> lastNeeded = graph.lastOpNeeding();
  std::vector<double> fixedMemory(n, double(graph.persistentBytes()) / budget);
  std::vector<int64_t> externalLastNeeded(n, int64_t(n));
  for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
    if (tensor.producer || graph.isPersistent(t))
      continue;
    for (int64_t s = 0; s <= lastNeeded[t]; ++s)
      fixedMemory[s] += double(tensor.bytes) / budget;
    for (OpId consumer : tensor.consumers)
      externalLastNeeded[consumer] =
          std::min(externalLastNeeded[consumer], lastNeeded[t]);
  }
  for (double fixed : fixedMemory)
    if (fixed > 1) {
      result.status = MilpStatus::Infeasible;
      return result;
    }

  std::vector<llvm::SmallVector<OpId, 4>> producersRead(n), readers(n);
  for (OpId k = 0; k < n; ++k) {
    llvm::SmallDenseSet<OpId, 4> seen;
    for (TensorId t : graph.op(k).inputs)
      if (auto producer = graph.tensor(t).producer)
        if (seen.insert(*producer).second) {
          producersRead[k].push_back(*producer);
          readers[*producer].push_back(k);
        }
  }
  for (auto &list : readers)
    llvm::sort(list);

  MilpModel milp;
  double costUnit = solverCostUnit(graph.totalCost(), n);
  std::vector<int> runs(triangle(n, 0)), live(triangle(n, 0)),
      kept(triangle(n, 0));
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i <= t; ++i) {
      int r = runs[triangle(t, i)] =
          milp.addBinary(graph.op(i).cost / costUnit);
      bool forbidden = i < t && (!recomputable[i] || pinned[i] ||
                                 int64_t(t) > externalLastNeeded[i]);
      if (i == t)
        milp.fix(r, 1);
      else if (forbidden)
        milp.fix(r, 0);
      live[triangle(t, i)] = milp.addColumn(0, 1 - fixedMemory[t], 0, false);
      // S[t,i] exists for i < t; slot (t, t) stays unused.
      if (i < t) {
        int s = kept[triangle(t, i)] = milp.addBinary();
        if (pinned[i])
          milp.fix(s, 1);
      }
    }
  }
  auto R = [&](size_t t, size_t i) { return runs[triangle(t, i)]; };
  auto S = [&](size_t t, size_t i) { return kept[triangle(t, i)]; };
  auto U = [&](size_t t, size_t k) { return live[triangle(t, k)]; };

  for (size_t t = 0; t < n; ++t) {
    // A run needs each input resident: computed earlier in the stage or
    // kept from the previous one.
    for (size_t k = 0; k <= t; ++k)
      for (OpId i : producersRead[k]) {
        llvm::SmallVector<std::pair<int, double>, 3> terms = {{R(t, k), 1},
                                                              {R(t, i), -1}};
        if (i < t)
          terms.push_back({S(t, i), -1});
        milp.addRow(terms, -kNoLimit, 0);
      }
    // Only what exists in stage t can be kept into stage t+1.
    if (t + 1 < n)
      for (size_t i = 0; i <= t; ++i) {
        llvm::SmallVector<std::pair<int, double>, 3> terms = {{S(t + 1, i), 1},
                                                              {R(t, i), -1}};
        if (i < t)
          terms.push_back({S(t, i), -1});
        milp.addRow(terms, -kNoLimit, 0);
      }

    // Memory: start with what was kept, then for each op add its outputs
    // and subtract what the previous op released.
    llvm::SmallVector<std::pair<int, double>> terms = {{U(t, 0), 1},
                                                       {R(t, 0), -memory[0]}};
    for (size_t i = 0; i < t; ++i)
      terms.push_back({S(t, i), -memory[i]});
    milp.addRow(terms, 0, 0);
    for (size_t k = 0; k <= t; ++k) {
      // Ops whose outputs may be released right after op k: k itself and
      // the producers it reads.
      llvm::SmallVector<std::pair<int, double>> release;
      llvm::SmallVector<OpId, 5> candidates(producersRead[k].begin(),
                                            producersRead[k].end());
      candidates.push_back(k);
      for (OpId i : candidates) {
        if (pinned[i] || memory[i] == 0)
          continue;
        int f = milp.addColumn(0, 1, 0, false);
        release.push_back({f, memory[i]});
        milp.addRow({{f, 1}, {R(t, k), -1}}, -kNoLimit, 0);
        if (t + 1 < n)
          milp.addRow({{f, 1}, {S(t + 1, i), 1}}, -kNoLimit, 1);
        for (OpId j : readers[i])
          if (j > k && j <= t)
            milp.addRow({{f, 1}, {R(t, j), 1}}, -kNoLimit, 1);
      }
      if (k == t)
        break;
      llvm::SmallVector<std::pair<int, double>> next = {
          {U(t, k + 1), 1}, {U(t, k), -1}, {R(t, k + 1), -memory[k + 1]}};
      llvm::append_range(next, release);
      milp.addRow(next, 0, 0);
    }
  }

  if (!options.startRuns.empty())
    milp.setStart(getStartValues(graph, options.startRuns, R, S));

  // HiGHS 1.15.1's presolve returned "optimal" at 4 where a plan of 3
  // exists, on a 6-op graph with a budget met exactly and an op whose only
  // output is empty and pinned (RelaxationRebuildsTheDeadInput). Without it
  // the solve is as fast on the bench graphs of 100 ops and exact there.
  milp.disablePresolve();
  MilpSolution solution = milp.solve(options.timeLimitSeconds);
  result.solveSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - startTime)
                            .count();
  using Status = MilpSolution::Status;
  if (solution.status != Status::Infeasible)
    result.lowerBoundCost = std::max(0.0, solution.bestBound * costUnit);
  if (solution.status == Status::Optimal ||
      solution.status == Status::Feasible) {
    result.status = solution.status == Status::Optimal ? MilpStatus::Optimal
                                                       : MilpStatus::Feasible;
    std::vector<OpId> opRuns;
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i <= t; ++i)
        if (solution.values[R(t, i)] > 0.5)
          opRuns.push_back(i);
    llvm::Expected<Plan> plan =
        buildPlan(graph, insertFrees(graph, opRuns), device);
    if (!plan)
      return plan.takeError();
    if (plan->simulation.peakBytes > budget)
      return llvm::createStringError(llvm::formatv(
          "MILP solution peaks at {0} bytes, over the budget of {1}",
          plan->simulation.peakBytes, budget));
    result.plan = std::move(*plan);
  } else {
    result.status = solution.status == Status::Infeasible
                        ? MilpStatus::Infeasible
                        : MilpStatus::NoSolution;
  }
  if (options.startRuns.empty())
    return result;

  // The start where the solver holds nothing cheaper. A stage model that
  // cannot express it may call the budget infeasible, or bound the cost
  // above the start's: the start proves a plan exists, and the solver's
  // bound holds for its model only, so it is dropped.
  llvm::Expected<Plan> start =
      buildPlan(graph, insertFrees(graph, options.startRuns), device);
  if (!start)
    return start.takeError();
  if (start->simulation.peakBytes > budget ||
      (result.plan &&
       result.plan->simulation.totalTime <= start->simulation.totalTime))
    return result;
  if (device.computeTime(result.lowerBoundCost) > start->simulation.totalTime)
    result.lowerBoundCost = 0;
  result.status = MilpStatus::Feasible;
  result.plan = std::move(*start);
  return result;
}
