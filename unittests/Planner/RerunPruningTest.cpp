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
