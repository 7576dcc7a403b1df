//===- PlannerTest.cpp - Planner results checked against hand arithmetic --===//
//
// A 4-layer chain, forward f0..f3 then backward b3..b0, every tensor 10
// bytes. Forward costs 3, 1, 2, 2; a backward op costs twice its forward op
// (b3 4, b2 4, b1 2, b0 6): unplanned compute time 24. Tensors: a_i is the
// output of f_i, g_i that of b_i; b_i reads a_i and g_{i+1}.
//
//===----------------------------------------------------------------------===//

#include "Replay.h"
#include "vram/Planner/GraphSources.h"
#include "vram/Planner/Planners.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace vram::planner;

namespace {
constexpr uint64_t kBytes = 10;

PlanningGraph makeChain() {
  return makeTrainingChain({kBytes, kBytes, kBytes, kBytes}, {3, 1, 2, 2});
}

std::vector<std::string> opNames(const PlanningGraph &graph, const Plan &plan) {
  std::vector<std::string> names;
  for (OpId op : plan.opOrder())
    names.push_back(graph.op(op).name);
  return names;
}

TensorId tensorNamed(const PlanningGraph &graph, llvm::StringRef name) {
  for (auto [id, tensor] : llvm::enumerate(graph.tensors()))
    if (tensor.name == name)
      return id;
  ADD_FAILURE() << "no tensor " << name.str();
  return 0;
}

const std::vector<std::string> kOneRecompute = {"f0", "f1", "f2", "f3", "b3",
                                                "b2", "f1", "b1", "b0"};

TEST(PlannerTest, KeepAllPeaksAtFirstBackwardOps) {
  PlanningGraph graph = makeChain();
  llvm::Expected<Plan> plan = planKeepAll(graph, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  // While b3 runs: a0..a3 and the new g3 = 5 x 10 = 50. While b2 runs: a3
  // is gone, a0..a2, g3 and the new g2 = 50 again.
  EXPECT_EQ(plan->simulation.peakBytes, 5 * kBytes);
  EXPECT_EQ(unplannedPeak(graph), 5 * kBytes);
  EXPECT_DOUBLE_EQ(plan->simulation.baselineTime, 24);
  EXPECT_DOUBLE_EQ(plan->simulation.overhead(), 0);
  for (const TensorDecision &decision : plan->decisions)
    EXPECT_TRUE(decision.isKept());
}

TEST(PlannerTest, LowerBoundIsLargestOp) {
  // b2 reads a2 and g3 and writes g2: 30 bytes; no op touches more.
  EXPECT_EQ(memoryLowerBound(makeChain()), 3 * kBytes);
}

TEST(PlannerTest, FastRecomputesCheapestActivation) {
  PlanningGraph graph = makeChain();
  // At b3 (40 bytes resident, g3 needs 10 more) one of a0, a1, a2 must go.
  // Cost per byte per time unit away: a0 3/(10*10), a1 1/(10*8),
  // a2 2/(10*4), with times from b3 to the next use. a1 goes; f1 reruns
  // before b1 (a0 is still there): 1 time unit extra.
  llvm::Expected<Plan> plan = planFast(graph, 4 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(opNames(graph, *plan), kOneRecompute);
  EXPECT_EQ(plan->simulation.peakBytes, 4 * kBytes);
  EXPECT_DOUBLE_EQ(plan->simulation.recomputeTime, 1);
  EXPECT_DOUBLE_EQ(plan->simulation.overhead(), 1.0 / 24);
  TensorId a1 = tensorNamed(graph, "f1");
  EXPECT_TRUE(plan->decisions[a1].isRecomputed());
  for (auto [t, decision] : llvm::enumerate(plan->decisions)) {
    if (t != a1) {
      EXPECT_TRUE(decision.isKept()) << graph.tensor(t).name;
    }
  }
}

TEST(PlannerTest, MilpFindsTheSingleCheapestRecompute) {
  PlanningGraph graph = makeChain();
  // Same optimum as above: no plan without recomputation fits 40 bytes
  // (the unplanned peak is 50), f1 is the cheapest op, and rerunning it
  // before b2 instead of before b1 would make b2 peak at 50.
  llvm::Expected<MilpResult> result =
      planMilp(graph, 4 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  ASSERT_EQ(result->status, MilpStatus::Optimal);
  EXPECT_NEAR(result->lowerBoundCost, 25, 1e-6);
  EXPECT_EQ(opNames(graph, *result->plan), kOneRecompute);
  EXPECT_EQ(result->plan->simulation.peakBytes, 4 * kBytes);
}

TEST(PlannerTest, MilpStartsFromTheGivenPlan) {
  PlanningGraph graph = makeChain();
  // The fast plan for 30 bytes also fits 40, at 24 + 7 = 31 where the
  // optimum costs 25 (above): HiGHS starts from it and finds the optimum.
  llvm::Expected<Plan> start = planFast(graph, 3 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(start)) << llvm::toString(start.takeError());
  EXPECT_DOUBLE_EQ(start->simulation.totalTime, 31);
  MilpOptions options;
  options.startRuns = start->opOrder();
  llvm::Expected<MilpResult> solved =
      planMilp(graph, 4 * kBytes, MachineModel(), options);
  ASSERT_TRUE(static_cast<bool>(solved)) << llvm::toString(solved.takeError());
  ASSERT_EQ(solved->status, MilpStatus::Optimal);
  EXPECT_EQ(opNames(graph, *solved->plan), kOneRecompute);

  // With no time to search, the start is the result and the bound is
  // unknown; without a start there is none.
  options.timeLimitSeconds = 0;
  llvm::Expected<MilpResult> stopped =
      planMilp(graph, 4 * kBytes, MachineModel(), options);
  ASSERT_TRUE(static_cast<bool>(stopped))
      << llvm::toString(stopped.takeError());
  EXPECT_EQ(stopped->status, MilpStatus::Feasible);
  ASSERT_TRUE(stopped->plan.has_value());
  EXPECT_EQ(stopped->plan->opOrder(), start->opOrder());
  options.startRuns.clear();
  llvm::Expected<MilpResult> cold =
      planMilp(graph, 4 * kBytes, MachineModel(), options);
  ASSERT_TRUE(static_cast<bool>(cold)) << llvm::toString(cold.takeError());
  EXPECT_EQ(cold->status, MilpStatus::NoSolution);
  EXPECT_FALSE(cold->plan.has_value());
}

TEST(PlannerTest, ImpossibleBudgetReportsWhatWouldFit) {
  PlanningGraph graph = makeChain();
  llvm::Expected<Plan> plan = planFast(graph, 3 * kBytes - 1, MachineModel());
  ASSERT_FALSE(static_cast<bool>(plan));
  uint64_t smallest = 0;
  llvm::handleAllErrors(plan.takeError(), [&](const BudgetTooSmallError &e) {
    // b2 reads a2 and g3 and writes g2; nothing persistent.
    EXPECT_EQ(e.floor.bytes(), 3 * kBytes);
    EXPECT_EQ(e.floor.residentArguments, 0u);
    ASSERT_TRUE(e.floor.op.has_value());
    EXPECT_EQ(graph.op(*e.floor.op).name, "b2");
    smallest = e.smallestFeasible;
  });
  EXPECT_GE(smallest, 3 * kBytes);
  llvm::Expected<Plan> fits = planFast(graph, smallest, MachineModel());
  ASSERT_TRUE(static_cast<bool>(fits)) << llvm::toString(fits.takeError());
  EXPECT_LE(fits->simulation.peakBytes, smallest);

  llvm::Expected<MilpResult> milp =
      planMilp(graph, 3 * kBytes - 1, MachineModel());
  ASSERT_TRUE(static_cast<bool>(milp)) << llvm::toString(milp.takeError());
  EXPECT_EQ(milp->status, MilpStatus::Infeasible);
}

TEST(PlannerTest, GraphWithoutOpsHoldsItsArguments) {
  // One 16-byte parameter and nothing to run: every plan holds it, and the
  // peak is its 16 bytes, not 0.
  PlanningGraph graph;
  graph.addTensor("w", 16, TensorCategory::Parameter, std::nullopt);
  ASSERT_FALSE(static_cast<bool>(graph.verify()));
  llvm::Expected<Plan> fits = planFast(graph, 16, MachineModel());
  ASSERT_TRUE(static_cast<bool>(fits)) << llvm::toString(fits.takeError());
  EXPECT_EQ(fits->simulation.peakBytes, 16u);
  EXPECT_EQ(unplannedPeak(graph), 16u);

  llvm::Expected<Plan> tight = planFast(graph, 15, MachineModel());
  ASSERT_FALSE(static_cast<bool>(tight));
  llvm::handleAllErrors(tight.takeError(), [](const BudgetTooSmallError &e) {
    EXPECT_EQ(e.smallestFeasible, 16u);
    EXPECT_EQ(e.floor.bytes(), 16u);
    EXPECT_FALSE(e.floor.op.has_value());
  });
}

TEST(PlannerTest, RelaxationBoundsTheChain) {
  PlanningGraph graph = makeChain();
  // Schedule f0 f1 f2 f3 b3 b2 b1 b0 (ops 0-7). Gaps (ops strictly between
  // consecutive uses): a0 2..6 (read by f1 and b0), a1 3..5, a2 4..4.
  // Budget 40: b3 touches a3, g3 (20) with a0, a1, a2 alive across it (50):
  // one must go; b2 touches 30 with a0, a1 across (50): a0 or a1 must go.
  // Dropping a1 (f1 costs 1) covers both: the bound is the optimum, 1.
  llvm::Expected<RecomputeBound> loose = recomputeLowerBound(graph, 4 * kBytes);
  ASSERT_TRUE(static_cast<bool>(loose)) << llvm::toString(loose.takeError());
  EXPECT_FALSE(loose->infeasible);
  EXPECT_TRUE(loose->exact);
  EXPECT_NEAR(loose->extraCost, 1, 1e-6);

  // Budget 30: b2 (30 touched, a0 and a1 across) needs both gone: f0 + f1
  // = 3 + 1 = 4, which also covers f3, b3 and b1. The real optimum is
  // higher (rerunning f1 needs a0 back), which the relaxation ignores.
  llvm::Expected<RecomputeBound> tight = recomputeLowerBound(graph, 3 * kBytes);
  ASSERT_TRUE(static_cast<bool>(tight)) << llvm::toString(tight.takeError());
  EXPECT_NEAR(tight->extraCost, 4, 1e-6);
  llvm::Expected<MilpResult> milp = planMilp(graph, 3 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(milp)) << llvm::toString(milp.takeError());
  ASSERT_EQ(milp->status, MilpStatus::Optimal);
  EXPECT_GE(milp->lowerBoundCost - graph.totalCost(), tight->extraCost);

  // Below what b2 touches, nothing fits.
  llvm::Expected<RecomputeBound> impossible =
      recomputeLowerBound(graph, 3 * kBytes - 1);
  ASSERT_TRUE(static_cast<bool>(impossible));
  EXPECT_TRUE(impossible->infeasible);
}

/// bn(w) -> b, relu(b) -> r, f(r) -> y (30 B), heavy(y) -> h, back(h, r)
/// -> g (an output); every other tensor 10 B, w a parameter. Costs bn 2,
/// the others 1. With `peekAtB`, an op right after bn also reads b and
/// writes an empty output, as a forward layer reads the activation its
/// weight gradient reads again later. (HiGHS's presolve found 4, not the
/// optimum 3, on the MILP of that graph: MilpPlanner turns it off.)
static PlanningGraph makeDeadInputGraph(bool peekAtB) {
  PlanningGraph graph;
  OpId bn = graph.addOp("bn", 2, false);
  std::optional<OpId> peek;
  if (peekAtB)
    peek = graph.addOp("peek", 1, false);
  OpId relu = graph.addOp("relu", 1, false);
  OpId f = graph.addOp("f", 1, false);
  OpId heavy = graph.addOp("heavy", 1, false);
  OpId back = graph.addOp("back", 1, true);
  TensorId w = graph.addTensor("w", kBytes, TensorCategory::Parameter,
                               std::nullopt, false, false);
  TensorId b =
      graph.addTensor("b", kBytes, TensorCategory::Activation, bn, true, true);
  TensorId r = graph.addTensor("r", kBytes, TensorCategory::Activation, relu,
                               true, true);
  TensorId y = graph.addTensor("y", 3 * kBytes, TensorCategory::Activation, f,
                               true, true);
  TensorId h = graph.addTensor("h", kBytes, TensorCategory::Activation, heavy,
                               true, true);
  graph.addTensor("g", kBytes, TensorCategory::Output, back, true, true);
  if (peek) {
    graph.addTensor("z", 0, TensorCategory::Output, *peek, true, true);
    graph.addUse(*peek, b);
  }
  graph.addUse(bn, w);
  graph.addUse(relu, b);
  graph.addUse(f, r);
  graph.addUse(heavy, y);
  graph.addUse(back, h);
  graph.addUse(back, r);
  return graph;
}

/// On `graph`, whose unplanned peak is 60 B, at a budget of 50 B: the
/// relaxation's bound (solved exactly), the MILP's optimum and the fast
/// planner's recompute time are all `optimum`.
static void expectBoundMilpAndFastAgree(const PlanningGraph &graph,
                                        double optimum) {
  ASSERT_FALSE(static_cast<bool>(graph.verify()));
  EXPECT_EQ(unplannedPeak(graph), 6 * kBytes);

  llvm::Expected<RecomputeBound> bound = recomputeLowerBound(graph, 5 * kBytes);
  ASSERT_TRUE(static_cast<bool>(bound)) << llvm::toString(bound.takeError());
  EXPECT_FALSE(bound->infeasible);
  EXPECT_TRUE(bound->exact);
  EXPECT_NEAR(bound->extraCost, optimum, 1e-6);

  llvm::Expected<MilpResult> milp = planMilp(graph, 5 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(milp)) << llvm::toString(milp.takeError());
  ASSERT_EQ(milp->status, MilpStatus::Optimal);
  EXPECT_NEAR(milp->lowerBoundCost - graph.totalCost(), optimum, 1e-6);
  llvm::Expected<Plan> fast = planFast(graph, 5 * kBytes, MachineModel());
  ASSERT_TRUE(static_cast<bool>(fast)) << llvm::toString(fast.takeError());
  EXPECT_DOUBLE_EQ(fast->simulation.recomputeTime, optimum);
}

TEST(PlannerTest, RelaxationRebuildsTheDeadInput) {
  // heavy touches y and h (40) beside w and r (alive across it, read again
  // by back): 60 unplanned. At 50, r must be gone while heavy runs, so relu
  // reruns before back; it needs b, which nothing reads after the first
  // relu, so bn reruns too (keeping b instead saves nothing: it is as large
  // as r). The bound counts both, 1 + 2 = 3, which is the optimum; without
  // the rebuild of b it would be 1. It does so whether or not an op before
  // relu also reads b: what matters is that relu reads it last.
  for (bool peekAtB : {false, true}) {
    SCOPED_TRACE(peekAtB ? "b also read before relu" : "b read by relu alone");
    expectBoundMilpAndFastAgree(makeDeadInputGraph(peekAtB), 3);
  }
}

/// A weight gradient waiting for the update, made as the training step makes
/// a convolution's: p(w) -> a (cost 4), t(a) -> aT, gw(aT) -> gT, tr(gT) ->
/// g, each read only by the next; then f(w) -> y (30 B), heavy(y) -> h,
/// update(g, h) -> o (an output). Every other tensor 10 B, w a parameter,
/// costs 1 but p's.
static PlanningGraph makeWeightGradientGraph() {
  PlanningGraph graph;
  OpId p = graph.addOp("p", 4, false);
  OpId t = graph.addOp("t", 1, true);
  OpId gw = graph.addOp("gw", 1, true);
  OpId tr = graph.addOp("tr", 1, true);
  OpId f = graph.addOp("f", 1, true);
  OpId heavy = graph.addOp("heavy", 1, true);
  OpId update = graph.addOp("update", 1, true);
  TensorId w = graph.addTensor("w", kBytes, TensorCategory::Parameter,
                               std::nullopt, false, false);
  auto add = [&](llvm::StringRef name, uint64_t bytes, OpId producer,
                 TensorCategory category = TensorCategory::Activation) {
    return graph.addTensor(name, bytes, category, producer, true, true);
  };
  TensorId a = add("a", kBytes, p);
  TensorId aT = add("aT", kBytes, t);
  TensorId gT = add("gT", kBytes, gw);
  TensorId g = add("g", kBytes, tr, TensorCategory::Gradient);
  TensorId y = add("y", 3 * kBytes, f);
  TensorId h = add("h", kBytes, heavy);
  add("o", kBytes, update, TensorCategory::Output);
  graph.addUse(p, w);
  graph.addUse(t, a);
  graph.addUse(gw, aT);
  graph.addUse(tr, gT);
  graph.addUse(f, w);
  graph.addUse(heavy, y);
  graph.addUse(update, g);
  graph.addUse(update, h);
  return graph;
}

TEST(PlannerTest, RelaxationFollowsTheDeadInputsDown) {
  // heavy touches y and h (40) beside w (10) and g (alive across it): 60
  // unplanned. At 50, g must be gone while heavy runs and come back for the
  // update. Its chain's tensors are all dead by then and each as large as g,
  // so keeping one instead saves nothing: tr, gw, t and p rerun, 1 + 1 + 1 +
  // 4 = 7, the optimum. Following one dead input only, the bound was 2.
  expectBoundMilpAndFastAgree(makeWeightGradientGraph(), 7);
}

TEST(PlannerTest, OffloadWhenTheCopyHides) {
  PlanningGraph graph = makeChain();
  // 100 bytes per time unit: a 10-byte copy takes 0.1, far less than the
  // compute between a tensor's forward and backward uses, so offloading
  // costs nothing and beats rerunning f1.
  MachineModel device;
  device.hostLinkBytesPerTime = 100;
  llvm::Expected<Plan> plan = planFast(graph, 4 * kBytes, device);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_LE(plan->simulation.peakBytes, 4 * kBytes);
  EXPECT_DOUBLE_EQ(plan->simulation.recomputeTime, 0);
  EXPECT_DOUBLE_EQ(plan->simulation.exposedTransferTime, 0);
  EXPECT_TRUE(llvm::any_of(plan->decisions, [](const TensorDecision &d) {
    return d.isOffloaded() && d.prefetchSteps.size() == 1;
  }));
}

TEST(PlannerTest, RecomputeWhenTheCopyIsSlow) {
  PlanningGraph graph = makeChain();
  // 2 bytes per time unit and no overlap: offloading a1 would stall 5 + 5,
  // rerunning f1 costs 1.
  MachineModel device;
  device.hostLinkBytesPerTime = 2;
  device.copiesOverlapCompute = false;
  llvm::Expected<Plan> plan = planFast(graph, 4 * kBytes, device);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(opNames(graph, *plan), kOneRecompute);
  EXPECT_DOUBLE_EQ(plan->simulation.exposedTransferTime, 0);
}

TEST(PlannerTest, ChenRecomputesEachSegmentOnce) {
  PlanningGraph graph = makeChain();
  // 4 forward ops: segments of ceil(sqrt(4)) = 2, so a1 and a3 are kept and
  // a0, a2 are dropped after f1, f3. b2 needs a2: rerun f2 from a1. b0
  // needs a0: rerun f0. Peak: while b3 runs a1, a3 and g3 = 30; after f2
  // reruns a1, a2, g3 + g2 during b2 = 40.
  llvm::Expected<Plan> plan = planChenSqrtN(graph, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  std::vector<std::string> expected = {"f0", "f1", "f2", "f3", "b3",
                                       "f2", "b2", "b1", "f0", "b0"};
  EXPECT_EQ(opNames(graph, *plan), expected);
  EXPECT_EQ(plan->simulation.peakBytes, 4 * kBytes);
  EXPECT_DOUBLE_EQ(plan->simulation.recomputeTime, 3 + 2);
}

TEST(PlannerTest, FastPlansWideFanInWithShortRebuilds) {
  // A random layered graph of 250 ops (bench/planner/random_layered.py),
  // where a node reads about a fifth of the level above: rebuilding a
  // dropped tensor from far back holds the inputs of every op on the way,
  // and at 70% of the peak the replays that drop such tensors evict what
  // their own rebuild needs next until they give up. Dropping only tensors
  // a few reruns rebuild meets the budget.
  llvm::SmallString<256> path(VRAM_RANDOM_LAYERED_GRAPHS_DIR);
  llvm::sys::path::append(
      path, "gen_random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json");
  llvm::Expected<PlanningGraph> graph = readNodeLinkGraph(path);
  ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
  uint64_t budget = unplannedPeak(*graph) * 7 / 10;
  llvm::Expected<Plan> plan = planFast(*graph, budget, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  llvm::Expected<SimulationResult> replayed =
      simulate(*graph, plan->steps, MachineModel());
  ASSERT_TRUE(static_cast<bool>(replayed))
      << llvm::toString(replayed.takeError());
  EXPECT_LE(replayed->peakBytes, budget);
  EXPECT_GT(replayed->recomputeTime, 0);
}

/// x -> c0 -> c1 -> ... -> c39 -> t, each op costing 1 and each c_i read
/// only by the next op; then y (12 bytes) from x, z from y, and a last op
/// reading x, t and z. At y's op x, t and y hold 1 + 10 + 12 = 23 bytes, so
/// under a budget of 14 t (10 bytes) must go, and its rebuild reruns the
/// whole chain of 41 ops, whose tensors are dead by then.
static PlanningGraph makeLongRebuild() {
  PlanningGraph graph;
  TensorId x = graph.addTensor("x", 1, TensorCategory::Input, std::nullopt);
  auto unary = [&](const std::string &name, TensorId input, uint64_t bytes) {
    OpId op = graph.addOp(name, 1);
    graph.addUse(op, input);
    return graph.addTensor(name, bytes, TensorCategory::Activation, op);
  };
  TensorId last = x;
  for (unsigned i = 0; i < 40; ++i)
    last = unary(llvm::formatv("c{0}", i).str(), last, 1);
  TensorId t = unary("t", last, 10);
  TensorId z = unary("z", unary("y", x, 12), 1);
  OpId end = graph.addOp("end", 1);
  for (TensorId input : {x, t, z})
    graph.addUse(end, input);
  graph.addTensor("out", 1, TensorCategory::Output, end);
  return graph;
}

TEST(ReplayTest, LongRebuildsArePricedAsOptionsSay) {
  PlanningGraph graph = makeLongRebuild();
  TensorId t = tensorNamed(graph, "t");
  auto recomputeKey = [&](LongRebuilds longRebuilds) -> std::optional<double> {
    std::vector<std::optional<EvictionCost>> costs(graph.numTensors());
    ReplayOptions options;
    options.budget = 14;
    options.longRebuilds = longRebuilds;
    options.evictionCosts = &costs;
    llvm::Expected<std::vector<PlanStep>> steps =
        replay(graph, MachineModel(), std::move(options));
    if (!steps) {
      llvm::consumeError(steps.takeError());
      return std::nullopt;
    }
    EXPECT_TRUE(costs[t].has_value());
    return costs[t] ? std::optional(costs[t]->recompute) : std::nullopt;
  };
  // The walk stops after 32 of the 41 ops (t's producer and c39..c9's).
  EXPECT_EQ(recomputeKey(LongRebuilds::CostTheWalk), 32);
  // Its worklist then holds c8, whose producer is one op more.
  EXPECT_EQ(recomputeKey(LongRebuilds::CostTheFrontier), 33);
  // Refused, t cannot go, and nothing else frees enough.
  EXPECT_EQ(recomputeKey(LongRebuilds::Refuse), std::nullopt);
}

TEST(SimulatorTest, RejectsReadOfFreedTensor) {
  PlanningGraph graph = makeChain();
  std::vector<PlanStep> steps = {PlanStep::compute(0), PlanStep::free(0),
                                 PlanStep::compute(1)};
  llvm::Expected<SimulationResult> result =
      simulate(graph, steps, MachineModel());
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "invalid plan at step 2: op 'f1' reads 'f0', which is not "
            "resident");
}

TEST(SimulatorTest, RejectsIncompletePlans) {
  PlanningGraph graph = makeChain();
  llvm::Expected<SimulationResult> result =
      simulate(graph, {PlanStep::compute(0)}, MachineModel());
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()), "op 'f1' never runs");
}

TEST(SimulatorTest, FreeWaitsForItsOffload) {
  PlanningGraph graph = makeChain();
  MachineModel device;
  device.hostLinkBytesPerTime = 1; // a 10-byte copy takes 10
  // f0 (3), offload a0 from 3 to 13, free waits until 13: 10 exposed.
  std::vector<PlanStep> steps = {PlanStep::compute(0), PlanStep::offload(0),
                                 PlanStep::free(0), PlanStep::prefetch(0)};
  for (PlanStep step : insertFrees(graph, {0, 1, 2, 3, 4, 5, 6, 7}))
    if (!(step == PlanStep::compute(0)))
      steps.push_back(step);
  // The prefetch of a0 runs 13..23 and f1 waits for it: 20 exposed in all.
  llvm::Expected<SimulationResult> result = simulate(graph, steps, device);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  EXPECT_DOUBLE_EQ(result->exposedTransferTime, 20);
  EXPECT_DOUBLE_EQ(result->totalTime, 24 + 20);
}
} // namespace

namespace {
/// x (persistent, 10 B) -> z = zeros (8 B) -> s = scatter(z, x) in z's
/// storage (8 B) -> y = use(s) (4 B, output); then w = update(x) in place.
struct InPlaceGraph {
  PlanningGraph graph;
  TensorId x, z, s, y;
  OpId zeros, scatter, use, update;

  InPlaceGraph() {
    x = graph.addTensor("x", 10, TensorCategory::Parameter, std::nullopt);
    zeros = graph.addOp("zeros", 1);
    z = graph.addTensor("z", 8, TensorCategory::Activation, zeros);
    scatter = graph.addOp("scatter", 1);
    graph.addUse(scatter, z);
    graph.addUse(scatter, x);
    s = graph.addTensor("s", 8, TensorCategory::Activation, scatter);
    graph.setReusesStorageOf(s, z);
    use = graph.addOp("use", 1);
    graph.addUse(use, s);
    y = graph.addTensor("y", 4, TensorCategory::Output, use);
    update = graph.addOp("update", 1);
    graph.addWrite(update, x);
  }
};
} // namespace

TEST(InPlaceTest, OutputInAnInputsStorageCountsOnce) {
  InPlaceGraph g;
  ASSERT_FALSE(static_cast<bool>(g.graph.verify()));
  // x 10 + z 8 while zeros runs; the scatter makes s in z's storage: 18,
  // not 26; use adds y: 10 + 8 + 4 = 22.
  EXPECT_EQ(unplannedPeak(g.graph), 22u);
  // The scatter touches z (8) once, x is persistent.
  EXPECT_EQ(g.graph.bytesTouchedBy(g.scatter), 8u);
  // Its run consumes z: a Free of z afterwards is invalid.
  std::vector<PlanStep> steps = {PlanStep::compute(g.zeros),
                                 PlanStep::compute(g.scatter),
                                 PlanStep::free(g.z)};
  llvm::Expected<SimulationResult> result =
      simulate(g.graph, steps, MachineModel());
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "invalid plan at step 2: free of 'z', which is not resident");
}

TEST(InPlaceTest, RerunAfterAnOverwriteIsRejected) {
  InPlaceGraph g;
  // The scatter read x before the update overwrote it: it may rerun before
  // the update, not after.
  EXPECT_TRUE(g.graph.canRerunBefore(g.scatter, g.update));
  EXPECT_FALSE(g.graph.canRerunBefore(g.scatter, g.update + 1));
  std::vector<PlanStep> steps = insertFrees(
      g.graph, {g.zeros, g.scatter, g.use, g.update, g.zeros, g.scatter});
  llvm::Expected<SimulationResult> result =
      simulate(g.graph, steps, MachineModel());
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "invalid plan at step 6: op 'scatter' reruns after 'update' "
            "overwrote its input 'x'");
}

TEST(InPlaceTest, StorageReuseMustBeOfALastRead) {
  PlanningGraph graph;
  OpId make = graph.addOp("make", 1);
  TensorId a = graph.addTensor("a", 8, TensorCategory::Activation, make);
  OpId scatter = graph.addOp("scatter", 1);
  graph.addUse(scatter, a);
  TensorId b = graph.addTensor("b", 8, TensorCategory::Activation, scatter);
  graph.setReusesStorageOf(b, a);
  OpId later = graph.addOp("later", 1);
  graph.addUse(later, a);
  graph.addUse(later, b);
  EXPECT_EQ(llvm::toString(graph.verify()),
            "'b' reuses the storage of 'a', which is not an input of its "
            "producer of the same size read by nothing after it");
}

TEST(FreeAfterLastUseTest, MovesFreesUpUnlessACopyIsOut) {
  PlanningGraph graph = makeChain();
  TensorId a0 = tensorNamed(graph, "f0"), a1 = tensorNamed(graph, "f1");
  // a1 is last read by f2 (step 2) but freed after f3; a0 has a copy out, so
  // its Free marks when its memory is released and stays.
  std::vector<PlanStep> steps = {PlanStep::compute(0), PlanStep::compute(1),
                                 PlanStep::compute(2), PlanStep::offload(a0),
                                 PlanStep::compute(3), PlanStep::free(a1),
                                 PlanStep::free(a0)};
  std::vector<PlanStep> moved = freeAfterLastUse(graph, steps);
  std::vector<PlanStep> expected = {PlanStep::compute(0),  PlanStep::compute(1),
                                    PlanStep::compute(2),  PlanStep::free(a1),
                                    PlanStep::offload(a0), PlanStep::compute(3),
                                    PlanStep::free(a0)};
  EXPECT_EQ(moved, expected);
}

TEST(HostMemoryTest, ArgumentsFreedBeforeTheFirstOpStayOnHost) {
  InPlaceGraph g;
  MachineModel device;
  device.hostLinkBytesPerTime = 1;
  // x in host memory: in for the scatter, written by the update, back out.
  std::vector<PlanStep> steps = {
      PlanStep::free(g.x),         PlanStep::compute(g.zeros),
      PlanStep::prefetch(g.x),     PlanStep::compute(g.scatter),
      PlanStep::compute(g.use),    PlanStep::free(g.s),
      PlanStep::compute(g.update), PlanStep::offload(g.x),
      PlanStep::free(g.x)};
  llvm::Expected<SimulationResult> result = simulate(g.graph, steps, device);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  // The step starts without x: z 8 + x 10 while the scatter runs (s in z's
  // storage), then x + s + y = 22 while use runs.
  EXPECT_EQ(result->peakBytes, 22u);
  // Without the copy back, the updated x is lost.
  steps.erase(steps.end() - 2);
  result = simulate(g.graph, steps, device);
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "the final value of 'x' is not back in host memory");
  // Only before the first op, and only with a host link.
  result = simulate(g.graph, {PlanStep::compute(g.zeros), PlanStep::free(g.x)},
                    device);
  ASSERT_FALSE(static_cast<bool>(result));
  EXPECT_EQ(llvm::toString(result.takeError()),
            "invalid plan at step 1: free of 'x', which must stay resident");
}
