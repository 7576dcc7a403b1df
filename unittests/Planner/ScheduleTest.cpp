//===- ScheduleTest.cpp - The memory order, by hand and on random DAGs ----===//

#include "vram/Planner/Schedule.h"
#include "vram/Planner/GraphSources.h"
#include "vram/Planner/Planners.h"

#include "llvm/ADT/Sequence.h"

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

TEST(ScheduleTest, KeepsTheGivenOrderWhereTheLeastGrowthFirstCostsMore) {
  // x (10 B input) is read by a (makes A, 100 B) and c (makes C, 50 B); b
  // shrinks A to B (1 B); e joins B and C into the 1 B output.
  PlanningGraph graph;
  TensorId x = graph.addTensor("x", 10, TensorCategory::Input, std::nullopt);
  OpId a = graph.addOp("a", 1), b = graph.addOp("b", 1),
       c = graph.addOp("c", 1), e = graph.addOp("e", 1);
  TensorId tA = graph.addTensor("A", 100, TensorCategory::Activation, a);
  TensorId tB = graph.addTensor("B", 1, TensorCategory::Activation, b);
  TensorId tC = graph.addTensor("C", 50, TensorCategory::Activation, c);
  graph.addTensor("out", 1, TensorCategory::Output, e);
  graph.addUse(a, x);
  graph.addUse(b, tA);
  graph.addUse(c, x);
  graph.addUse(e, tB);
  graph.addUse(e, tC);
  // Given order a, b, c, e: while b runs x 10 + A 100 + B 1 = 111.
  EXPECT_EQ(unplannedPeak(graph), 111u);
  // Least growth first would run c (50) before a (100 - 10 once c has read
  // x): C 50 + A 100 + B 1 = 151 while b runs. Keeping the given order and
  // running b (1 - 100) as soon as it can keeps 111, and wins.
  std::vector<OpId> order = orderForMemory(graph);
  EXPECT_EQ(opNames(graph, order),
            (std::vector<std::string>{"a", "b", "c", "e"}));
  EXPECT_EQ(unplannedPeak(reorderGraph(graph, order)), 111u);
}

TEST(ScheduleTest, MovesAnOpBothListSchedulesRunTooEarly) {
  // q makes E (5 B), which only the last op f reads; the chain p1..p4 makes
  // A (10 B), B (50 B), C (50 B), D (1 B), each from the one before; f
  // joins D and E into the 1 B output.
  PlanningGraph graph;
  OpId q = graph.addOp("q", 1), p1 = graph.addOp("p1", 1),
       p2 = graph.addOp("p2", 1), p3 = graph.addOp("p3", 1),
       p4 = graph.addOp("p4", 1), f = graph.addOp("f", 1);
  TensorId tE = graph.addTensor("E", 5, TensorCategory::Activation, q);
  TensorId tA = graph.addTensor("A", 10, TensorCategory::Activation, p1);
  TensorId tB = graph.addTensor("B", 50, TensorCategory::Activation, p2);
  TensorId tC = graph.addTensor("C", 50, TensorCategory::Activation, p3);
  TensorId tD = graph.addTensor("D", 1, TensorCategory::Activation, p4);
  graph.addTensor("out", 1, TensorCategory::Output, f);
  graph.addUse(p2, tA);
  graph.addUse(p3, tB);
  graph.addUse(p4, tC);
  graph.addUse(f, tD);
  graph.addUse(f, tE);
  // Given order: while p3 runs, E 5 + B 50 + C 50 = 105.
  EXPECT_EQ(unplannedPeak(graph), 105u);
  // Both list schedules run q first as the given order does: it grows live
  // bytes less than p1 (5 against 10), and no chain of four from p1 shrinks
  // them (10, 50, 50, 1). Moved to just before f, q holds E over nothing:
  // p3 peaks at B 50 + C 50 = 100, and of the places that give 100 there
  // the sum of live bytes is least (p1..p4, q, f: 10, 60, 100, 51, 6, 7).
  std::vector<OpId> order = orderForMemory(graph);
  EXPECT_EQ(opNames(graph, order),
            (std::vector<std::string>{"p1", "p2", "p3", "p4", "q", "f"}));
  EXPECT_EQ(unplannedPeak(reorderGraph(graph, order)), 100u);
}

TEST(ScheduleTest, EveryOrderIsTopologicalAndTheChosenOneNeverPeaksHigher) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PlanningGraph graph = makeRandomDag(10 + 5 * seed, 3, seed);
    for (const std::vector<OpId> &order : ordersForMemory(graph)) {
      std::vector<OpId> sorted = order;
      llvm::sort(sorted);
      ASSERT_EQ(sorted.size(), graph.numOps());
      ASSERT_TRUE(llvm::equal(sorted, llvm::seq<OpId>(0, graph.numOps())));
      EXPECT_FALSE(static_cast<bool>(reorderGraph(graph, order).verify()));
    }
    EXPECT_LE(unplannedPeak(reorderGraph(graph, orderForMemory(graph))),
              unplannedPeak(graph));
  }
}

TEST(ScheduleTest, OrdersAProgramWithoutOpsOrWithOne) {
  // A function that returns its argument plans no op; one op has one order.
  for (size_t ops : {0, 1}) {
    OrderingProblem problem(ops);
    std::vector<std::vector<unsigned>> orders = ordersForMemory(problem);
    ASSERT_EQ(orders.size(), 1u);
    EXPECT_EQ(orders.front().size(), ops);
  }
}

/// A training step's tail in the given order: b1 and b2 read parameters p1
/// and p2 (10 B each) and make their gradients (`gradientBytes` each); with
/// `castBytes`, c1 and c2 then cast them to tensors of that size (mixed
/// precision's fp32 gradients); last, u1 and u2 update the parameters in
/// place from what the gradients became.
PlanningGraph gradientsThenUpdates(uint64_t gradientBytes,
                                   std::optional<uint64_t> castBytes) {
  PlanningGraph graph;
  TensorId params[2], grads[2];
  for (unsigned i = 0; i < 2; ++i) {
    std::string n = std::to_string(i + 1);
    params[i] = graph.addTensor("p" + n, 10, TensorCategory::Parameter, {});
    OpId backward = graph.addOp("b" + n, 1, true);
    graph.addUse(backward, params[i]);
    grads[i] = graph.addTensor("g" + n, gradientBytes, TensorCategory::Gradient,
                               backward);
  }
  if (castBytes)
    for (unsigned i = 0; i < 2; ++i) {
      std::string n = std::to_string(i + 1);
      OpId cast = graph.addOp("c" + n, 1, true);
      graph.addUse(cast, grads[i]);
      grads[i] =
          graph.addTensor("f" + n, *castBytes, TensorCategory::Gradient, cast);
    }
  for (unsigned i = 0; i < 2; ++i) {
    OpId update = graph.addOp("u" + std::to_string(i + 1), 1, true);
    graph.addUse(update, grads[i]);
    graph.addWrite(update, params[i]);
  }
  return graph;
}

TEST(ScheduleTest, RunsAnUpdateRightAfterItsGradient) {
  PlanningGraph graph = gradientsThenUpdates(100, std::nullopt);
  // Given order: both gradients live while b2 and u1 run: 20 + 200 = 220.
  EXPECT_EQ(unplannedPeak(graph), 220u);
  // u1 frees 100 B and can run once b1 has: one gradient at a time, 120.
  std::vector<OpId> order = orderForMemory(graph);
  EXPECT_EQ(opNames(graph, order),
            (std::vector<std::string>{"b1", "u1", "b2", "u2"}));
  EXPECT_EQ(unplannedPeak(reorderGraph(graph, order)), 120u);
}

TEST(ScheduleTest, RunsACastAndItsUpdateRightAfterTheGradient) {
  // Half-precision gradients of 50 B, cast to 100 B.
  PlanningGraph graph = gradientsThenUpdates(50, 100);
  // Given order: while c2 runs, p1 + p2 20, f1 100, g2 50, f2 100 = 270.
  EXPECT_EQ(unplannedPeak(graph), 270u);
  // c1 alone grows live bytes (100 - 50), but c1 then u1 (the only op
  // waiting for it) shrinks them by 50: the pair runs before b2. While c1
  // and c2 run: 20 + 50 + 100 = 170.
  std::vector<OpId> order = orderForMemory(graph);
  EXPECT_EQ(opNames(graph, order),
            (std::vector<std::string>{"b1", "c1", "u1", "b2", "c2", "u2"}));
  EXPECT_EQ(unplannedPeak(reorderGraph(graph, order)), 170u);
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
