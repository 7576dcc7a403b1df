//===- RunGraphTest.cpp - A program's runs as a graph, checked by hand ----===//
//
// The program of RerunProgram.h, Q, A, B, C, A, D (A rerun for D), as a
// graph of its own has six ops and seven tensors: p, q, the first
// a (nothing reads it), b, c, the second a (read by D) and d. Its
// unplanned peak is the program's: 2+4+10+1 = 17 while C runs (q stays for
// the second A) and while the second A runs.
//
//===----------------------------------------------------------------------===//

#include "RunGraph.h"

#include "vram/Planner/Planners.h"

#include "RerunProgram.h"

#include "gtest/gtest.h"

using namespace vram::planner;

TEST(RunGraphTest, EachRunIsAnOpWithInstancesOfItsOwn) {
  RerunProgram p = makeRerunProgram();
  std::vector<OpId> runs = {p.opQ, p.opA, p.opB, p.opC, p.opA, p.opD};
  RunGraph runGraph = buildRunGraph(p.graph, runs);
  const PlanningGraph &g = runGraph.graph;
  ASSERT_FALSE(static_cast<bool>(g.verify()));
  EXPECT_EQ(runGraph.originalOp, runs);
  ASSERT_EQ(g.numOps(), 6u);
  ASSERT_EQ(g.numTensors(), 7u);
  // The two runs of A make two instances; D reads the second.
  ASSERT_EQ(g.op(1).outputs.size(), 1u);
  ASSERT_EQ(g.op(4).outputs.size(), 1u);
  TensorId first = g.op(1).outputs[0], second = g.op(4).outputs[0];
  EXPECT_NE(first, second);
  EXPECT_TRUE(g.tensor(first).consumers.empty());
  ASSERT_EQ(g.tensor(second).consumers.size(), 1u);
  EXPECT_EQ(g.tensor(second).consumers[0], 5u);
  // The second A reads q, made by the first run: q lives until then.
  EXPECT_EQ(g.op(4).inputs, g.op(1).inputs);
  EXPECT_EQ(unplannedPeak(g), 17u);
}

TEST(RunGraphTest, MapsAProgramBackToTheSameRuns) {
  RerunProgram p = makeRerunProgram();
  std::vector<OpId> runs = {p.opQ, p.opA, p.opB, p.opC, p.opA, p.opD};
  RunGraph runGraph = buildRunGraph(p.graph, runs);
  // The run graph's own schedule, rerunning its op 0 (Q) before its op 4
  // (the second A): q (4 B) is then away while B and C run, so C peaks at
  // 2+10+1 = 13 and the rerun of Q at 2+1+4 = 7; the second A at
  // 2+4+1+10 = 17 is now the peak.
  std::vector<OpId> rerunQ = {0, 1, 2, 3, 0, 4, 5};
  std::vector<PlanStep> steps = insertFrees(runGraph.graph, rerunQ);
  llvm::Expected<SimulationResult> onRunGraph =
      simulate(runGraph.graph, steps, MachineModel());
  ASSERT_TRUE(static_cast<bool>(onRunGraph))
      << llvm::toString(onRunGraph.takeError());
  std::optional<std::vector<PlanStep>> mapped =
      mapToOriginal(p.graph, runGraph, steps);
  ASSERT_TRUE(mapped.has_value());
  EXPECT_EQ(*mapped, insertFrees(p.graph, {p.opQ, p.opA, p.opB, p.opC, p.opQ,
                                           p.opA, p.opD}));
  llvm::Expected<SimulationResult> onGraph =
      simulate(p.graph, *mapped, MachineModel());
  ASSERT_TRUE(static_cast<bool>(onGraph))
      << llvm::toString(onGraph.takeError());
  EXPECT_EQ(onGraph->peakBytes, onRunGraph->peakBytes);
  EXPECT_EQ(onGraph->peakBytes, 17u);
  EXPECT_DOUBLE_EQ(onGraph->recomputeTime, 2);
  EXPECT_DOUBLE_EQ(onRunGraph->recomputeTime, 1);
}

TEST(RunGraphTest, HostCopiesAreNotMapped) {
  RerunProgram p = makeRerunProgram();
  RunGraph runGraph =
      buildRunGraph(p.graph, {p.opQ, p.opA, p.opB, p.opC, p.opD});
  std::vector<PlanStep> steps = {PlanStep::compute(0), PlanStep::compute(1),
                                 PlanStep::offload(2)};
  EXPECT_FALSE(mapToOriginal(p.graph, runGraph, steps).has_value());
}

TEST(RunGraphTest, KeptRunsMakeInstancesThatStay) {
  // Q, A, B, C, D without the rerun peaks at 2+10+10+1 = 23 while C runs
  // (a waits for D). At 20 the planner reruns A for D (C then at
  // 2+4+10+1 = 17, q kept for the rerun); with A's run kept, a cannot be
  // rebuilt, nothing else can go, and 20 is refused.
  RerunProgram p = makeRerunProgram();
  std::vector<OpId> runs = {p.opQ, p.opA, p.opB, p.opC, p.opD};
  RunGraph free = buildRunGraph(p.graph, runs);
  RunGraph kept = buildRunGraph(p.graph, runs, /*keptRuns=*/{1});
  TensorId a = kept.graph.op(1).outputs[0];
  EXPECT_TRUE(free.graph.canRecompute(a));
  EXPECT_FALSE(kept.graph.canRecompute(a));
  ASSERT_EQ(unplannedPeak(kept.graph), 23u);
  llvm::Expected<Plan> rerun = planFast(free.graph, 20, MachineModel());
  ASSERT_TRUE(static_cast<bool>(rerun)) << llvm::toString(rerun.takeError());
  EXPECT_EQ(rerun->simulation.peakBytes, 17u);
  llvm::Expected<Plan> refused = planFast(kept.graph, 20, MachineModel());
  ASSERT_FALSE(static_cast<bool>(refused));
  llvm::handleAllErrors(refused.takeError(),
                        [](const BudgetTooSmallError &error) {
                          EXPECT_EQ(error.smallestFeasible, 23u);
                        });
}
