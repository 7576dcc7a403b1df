//===- RerunPruningTest.cpp - Reruns taken back, checked by hand ----------===//
//
// p (2 B) is a parameter. Q makes q (4 B) from p; A makes a (10 B) from q;
// B makes b (10 B) from p; C makes the output c (1 B) from b; D makes the
// output d (1 B) from a. The program Q, A, B, C, A, D reruns A for D, so
// that a is gone while B and C run. Live bytes while each run runs, each
// instance freed after its last read: Q 2+4 = 6, A 2+4+10 = 16 (this a is
// never read), B 2+4+10 = 16, C 2+4+10+1 = 17, A again 2+4+1+10 = 17 (q's
// last read), D 2+1+10+1 = 14.
//
// Without the rerun, the first a stays until D (+10 at B and C), and q goes
// after its read by the first A (-4 at B and C): B 22, C 23.
//
//===----------------------------------------------------------------------===//

#include "RerunPruning.h"

#include "RerunProgram.h"

#include "gtest/gtest.h"

using namespace vram::planner;

namespace {

std::vector<PlanStep> withRerun(const RerunProgram &p) {
  return insertFrees(p.graph, {p.opQ, p.opA, p.opB, p.opC, p.opA, p.opD});
}

uint64_t peakOf(const RerunProgram &p, llvm::ArrayRef<PlanStep> steps) {
  llvm::Expected<SimulationResult> simulation =
      simulate(p.graph, steps, MachineModel());
  if (!simulation) {
    ADD_FAILURE() << llvm::toString(simulation.takeError());
    return 0;
  }
  return simulation->peakBytes;
}

TEST(RerunPruningTest, TakesOutTheRerunWhenTheBudgetAllows) {
  RerunProgram p = makeRerunProgram();
  ASSERT_FALSE(static_cast<bool>(p.graph.verify()));
  ASSERT_EQ(peakOf(p, withRerun(p)), 17u);
  // 23 holds C at 23 only because q goes sooner: the rerun's input counts.
  std::optional<std::vector<PlanStep>> pruned =
      pruneReruns(p.graph, withRerun(p), 23);
  ASSERT_TRUE(pruned.has_value());
  EXPECT_EQ(*pruned, insertFrees(p.graph, {p.opQ, p.opA, p.opB, p.opC, p.opD}));
  EXPECT_EQ(peakOf(p, *pruned), 23u);
}

TEST(RerunPruningTest, KeepsTheRerunTheBudgetNeeds) {
  RerunProgram p = makeRerunProgram();
  EXPECT_FALSE(pruneReruns(p.graph, withRerun(p), 22).has_value());
}

// p (2 B) is a parameter. X makes x (12 B) from p; Y makes y (4 B) from x;
// B makes b (10 B) from p; C makes the output c (1 B) from b; D makes the
// output d (1 B) from y. X, Y, B, C, X, Y, D rebuilds y for D through a
// rerun of X that feeds only the rerun of Y. Live bytes: X 2+12 = 14,
// Y 2+12+4 = 18, B 2+10 = 12, C 2+10+1 = 13, X again 2+1+12 = 15, Y again
// 2+1+12+4 = 19, D 2+1+4+1 = 8: peak 19. Without both reruns the first y
// stays until D: B 2+4+10 = 16, C 2+4+10+1 = 17, peak 18 (at Y). Without
// the rerun of Y alone, the rerun of X would run beside that y: 2+1+4+12 =
// 19; without that of X alone, the first x would stay until the rerun of
// Y. So at 18 only the two together can go.
TEST(RerunPruningTest, TakesOutARebuildChainTogether) {
  PlanningGraph g;
  TensorId param = g.addTensor("p", 2, TensorCategory::Parameter, {});
  OpId opX = g.addOp("X", 1);
  g.addUse(opX, param);
  TensorId x = g.addTensor("x", 12, TensorCategory::Activation, opX);
  OpId opY = g.addOp("Y", 1);
  g.addUse(opY, x);
  TensorId y = g.addTensor("y", 4, TensorCategory::Activation, opY);
  OpId opB = g.addOp("B", 1);
  g.addUse(opB, param);
  TensorId b = g.addTensor("b", 10, TensorCategory::Activation, opB);
  OpId opC = g.addOp("C", 1);
  g.addUse(opC, b);
  g.addTensor("c", 1, TensorCategory::Output, opC);
  OpId opD = g.addOp("D", 1);
  g.addUse(opD, y);
  g.addTensor("d", 1, TensorCategory::Output, opD);
  ASSERT_FALSE(static_cast<bool>(g.verify()));

  std::vector<PlanStep> steps =
      insertFrees(g, {opX, opY, opB, opC, opX, opY, opD});
  llvm::Expected<SimulationResult> before = simulate(g, steps, MachineModel());
  ASSERT_TRUE(static_cast<bool>(before));
  ASSERT_EQ(before->peakBytes, 19u);
  std::optional<std::vector<PlanStep>> pruned = pruneReruns(g, steps, 18);
  ASSERT_TRUE(pruned.has_value());
  EXPECT_EQ(*pruned, insertFrees(g, {opX, opY, opB, opC, opD}));
  llvm::Expected<SimulationResult> after = simulate(g, *pruned, MachineModel());
  ASSERT_TRUE(static_cast<bool>(after));
  EXPECT_EQ(after->peakBytes, 18u);
}

TEST(RerunPruningTest, LeavesProgramsWithCopiesAlone) {
  // A program that offloads a instead of rerunning A: no sequence of runs.
  RerunProgram p = makeRerunProgram();
  TensorId a = p.graph.op(p.opA).outputs.front();
  std::vector<PlanStep> steps = {
      PlanStep::compute(p.opQ), PlanStep::compute(p.opA),
      PlanStep::offload(a),     PlanStep::free(a),
      PlanStep::compute(p.opB), PlanStep::compute(p.opC),
      PlanStep::prefetch(a),    PlanStep::compute(p.opD)};
  EXPECT_FALSE(pruneReruns(p.graph, steps, 100).has_value());
}
} // namespace
