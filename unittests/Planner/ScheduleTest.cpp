//===- ScheduleTest.cpp - The memory-greedy order, checked by hand --------===//

#include "vram/Planner/Schedule.h"
#include "vram/Planner/Planners.h"

#include "gtest/gtest.h"

using namespace vram::planner;

namespace {
std::vector<std::string> opNames(const PlanningGraph &graph,
                                 llvm::ArrayRef<OpId> order) {
  std::vector<std::string> names;
  for (OpId op : order)
    names.push_back(graph.op(op).name);
  return names;
}

// Two branches from input x (10 B), interleaved by the given order: a1 and
// b1 each make 100 B, a2 and b2 shrink them to 1 B, join makes the 1 B
// output.
struct TwoBranches {
  PlanningGraph graph;
  TwoBranches() {
    TensorId x = graph.addTensor("x", 10, TensorCategory::Input, std::nullopt);
    OpId a1 = graph.addOp("a1", 1), b1 = graph.addOp("b1", 1);
    OpId a2 = graph.addOp("a2", 1), b2 = graph.addOp("b2", 1);
    OpId join = graph.addOp("join", 1);
    TensorId tA1 = graph.addTensor("A1", 100, TensorCategory::Activation, a1);
    TensorId tB1 = graph.addTensor("B1", 100, TensorCategory::Activation, b1);
    TensorId tA2 = graph.addTensor("A2", 1, TensorCategory::Activation, a2);
    TensorId tB2 = graph.addTensor("B2", 1, TensorCategory::Activation, b2);
    graph.addTensor("out", 1, TensorCategory::Output, join);
    graph.addUse(a1, x);
    graph.addUse(b1, x);
    graph.addUse(a2, tA1);
    graph.addUse(b2, tB1);
    graph.addUse(join, tA2);
    graph.addUse(join, tB2);
  }
};

TEST(ScheduleTest, FinishesABranchBeforeStartingTheNext) {
  TwoBranches g;
  // Given order: while b1 runs x, A1 and B1 are live: 10 + 100 + 100 = 210
  // (x is freed after b1, its last reader).
  EXPECT_EQ(unplannedPeak(g.graph), 210u);
  // a1 and b1 both grow 100 (the first wins); then a2 grows 1 - 100 and b1
  // 100 - 10 (x's last read), so a2 runs before b1.
  std::vector<OpId> order = orderForMemory(g.graph);
  EXPECT_EQ(opNames(g.graph, order),
            (std::vector<std::string>{"a1", "a2", "b1", "b2", "join"}));
  PlanningGraph reordered = reorderGraph(g.graph, order);
  ASSERT_FALSE(static_cast<bool>(reordered.verify()));
  // While a2 runs: x 10, A1 100, A2 1 = 111; while b1 runs: x 10, A2 1,
  // B1 100 = 111; then 102 and 3.
  EXPECT_EQ(unplannedPeak(reordered), 111u);
}

TEST(ScheduleTest, InPlaceWriterStaysBetweenTheReadersOfBothValues) {
  // p (40 B parameter) is read by r1, overwritten by w, then read by r2.
  // Without the write's ordering, w (no growth) would run first.
  PlanningGraph graph;
  TensorId p = graph.addTensor("p", 40, TensorCategory::Parameter, {});
  OpId r1 = graph.addOp("r1", 1), w = graph.addOp("w", 1),
       r2 = graph.addOp("r2", 1);
  graph.addTensor("t1", 50, TensorCategory::Output, r1);
  graph.addTensor("t2", 50, TensorCategory::Output, r2);
  graph.addUse(r1, p);
  graph.addWrite(w, p);
  graph.addUse(r2, p);
  EXPECT_EQ(opNames(graph, orderForMemory(graph)),
            (std::vector<std::string>{"r1", "w", "r2"}));
}
} // namespace
