//===- DropSelectionTest.cpp - Drops chosen ahead, checked by hand --------===//
//
// A five-op chain in which the tensor worth dropping needs an input that is
// dead by the time it is rebuilt: w = W(in), x = X(w), y = Y(x), z = Z(y),
// out = U(x, z). Bytes: in 2, w 8, x 10, y 10, z 10, out 1; every op costs 1.
// Live bytes while each op runs, unplanned (a tensor goes after its last
// read): W 2+8 = 10, X 8+10 = 18, Y 10+10 = 20, Z 10+10+10 = 30, U 10+10+1
// = 21. Only x spans Z, in its gap between its reads by Y and U. `in` is
// kept to the end whatever is chosen: it cannot be recomputed, and w, made
// from it, can (PlanningGraph::lastOpNeeding). The ranking's exponent is
// checked on a graph of its own, below.
//
//===----------------------------------------------------------------------===//

#include "DropSelection.h"

#include "vram/Planner/Planners.h"

#include "gtest/gtest.h"

using namespace vram::planner;

namespace {
struct Chain {
  PlanningGraph graph;
  TensorId in, w, x;
  OpId opY;
};

Chain makeChain() {
  Chain c;
  PlanningGraph &g = c.graph;
  c.in = g.addTensor("in", 2, TensorCategory::Input, std::nullopt);
  OpId opW = g.addOp("W", 1);
  g.addUse(opW, c.in);
  c.w = g.addTensor("w", 8, TensorCategory::Activation, opW);
  OpId opX = g.addOp("X", 1);
  g.addUse(opX, c.w);
  c.x = g.addTensor("x", 10, TensorCategory::Activation, opX);
  c.opY = g.addOp("Y", 1);
  g.addUse(c.opY, c.x);
  TensorId y = g.addTensor("y", 10, TensorCategory::Activation, c.opY);
  OpId opZ = g.addOp("Z", 1);
  g.addUse(opZ, y);
  TensorId z = g.addTensor("z", 10, TensorCategory::Activation, opZ);
  OpId opU = g.addOp("U", 1);
  g.addUse(opU, c.x);
  g.addUse(opU, z);
  g.addTensor("out", 1, TensorCategory::Output, opU);
  return c;
}

/// The drops `options` make: (the op after which, the tensor).
std::vector<std::pair<OpId, TensorId>> dropsIn(const ReplayOptions &options) {
  std::vector<std::pair<OpId, TensorId>> drops;
  for (auto [op, tensors] : llvm::enumerate(options.dropAfter))
    for (TensorId t : tensors)
      drops.push_back({OpId(op), t});
  return drops;
}

/// Selects drops for the chain at `budget`, expects x dropped after Y and
/// nothing else, and returns until when w is kept (-2 without a selection).
int64_t keepUntilOfW(uint64_t budget) {
  Chain c = makeChain();
  std::optional<ReplayOptions> options =
      selectDrops(c.graph, MachineModel(), budget);
  if (!options) {
    ADD_FAILURE() << "nothing selected at " << budget;
    return -2;
  }
  EXPECT_EQ(dropsIn(*options),
            (std::vector<std::pair<OpId, TensorId>>{{c.opY, c.x}}));
  return options->keepUntil[c.w];
}

TEST(DropSelectionTest, RebuildsTheDeadInputWhenKeepingItCostsTooMuch) {
  ASSERT_FALSE(static_cast<bool>(makeChain().graph.verify()));
  // Budget 25, 5 over at Z. Dropping x after Y saves 10 at Z, and its
  // rerun before U needs w, dead after X. Keeping w until then costs 8 at Y
  // and Z: Z at 30 - 10 + 8 = 28, still over. Rebuilding w as well needs
  // only `in` kept (2): Z at 22, for two reruns instead of one. w stays
  // dead after its read by X (op 1).
  EXPECT_EQ(keepUntilOfW(25), 1);
}

TEST(DropSelectionTest, KeepsTheDeadInputWhenThatIsEnough) {
  // Budget 29, 1 over at Z: keeping w until the rerun of X before U (op 4)
  // leaves Z at 28 with one rerun; rebuilding w too would take two.
  EXPECT_EQ(keepUntilOfW(29), 4);
}

TEST(DropSelectionTest, ChoosesNothingWithinTheBudget) {
  EXPECT_FALSE(selectDrops(makeChain().graph, MachineModel(), 30).has_value());
}

/// A, B and C make a (5 B), b (10 B) and c (5 B) from parameter p (1 B), at
/// the given costs; T makes t (20 B), which S reads; readers of a, b and c
/// follow in `readOrder` (indices into a, b, c), each costing 1. While T and
/// S run: 1 + 5 + 10 + 5 + 20 = 41, 10 over a budget of 31; every other op
/// is within it. Each drop removes its bytes at T and at S.
struct ThreeDrops {
  PlanningGraph graph;
  OpId makers[3];
  TensorId made[3];
};

ThreeDrops makeThreeDrops(const double (&costs)[3],
                          const unsigned (&readOrder)[3]) {
  ThreeDrops d;
  PlanningGraph &g = d.graph;
  TensorId p = g.addTensor("p", 1, TensorCategory::Parameter, {});
  const char *names[] = {"a", "b", "c"};
  uint64_t bytes[] = {5, 10, 5};
  for (unsigned i = 0; i < 3; ++i) {
    d.makers[i] = g.addOp(std::string(names[i]) + "-maker", costs[i]);
    g.addUse(d.makers[i], p);
    d.made[i] = g.addTensor(names[i], bytes[i], TensorCategory::Activation,
                            d.makers[i]);
  }
  OpId opT = g.addOp("T", 1), opS = g.addOp("S", 1);
  g.addUse(opT, p);
  g.addUse(opS, g.addTensor("t", 20, TensorCategory::Activation, opT));
  g.addTensor("s", 0, TensorCategory::Output, opS);
  for (unsigned i : readOrder) {
    OpId reader = g.addOp(std::string("U") + names[i], 1);
    g.addUse(reader, d.made[i]);
    g.addTensor(std::string("out-") + names[i], 0, TensorCategory::Output,
                reader);
  }
  return d;
}

TEST(DropSelectionTest, ALargerExponentTakesOneLargeDropOverTwoSmallOnes) {
  ThreeDrops d = makeThreeDrops({1, 2.1, 1.2}, {0, 1, 2});
  ASSERT_FALSE(static_cast<bool>(d.graph.verify()));
  // Exponent 1, excess removed per second: a 10 / 1, b 20 / 2.1 = 9.5, c
  // 10 / 1.2 = 8.3; a goes first, then c (8.3, b 4.8 for what is left): two
  // reruns, 2.2.
  std::optional<ReplayOptions> linear =
      selectDrops(d.graph, MachineModel(), 31);
  ASSERT_TRUE(linear.has_value());
  EXPECT_EQ(dropsIn(*linear),
            (std::vector<std::pair<OpId, TensorId>>{{d.makers[0], d.made[0]},
                                                    {d.makers[2], d.made[2]}}));
  // Exponent 1.5: a 10^1.5 / 1 = 31.6, b 20^1.5 / 2.1 = 42.6, c 26.4; b
  // alone covers the excess: one rerun, 2.1.
  std::optional<ReplayOptions> steep =
      selectDrops(d.graph, MachineModel(), 31, {1.5});
  ASSERT_TRUE(steep.has_value());
  EXPECT_EQ(dropsIn(*steep),
            (std::vector<std::pair<OpId, TensorId>>{{d.makers[1], d.made[1]}}));
}

TEST(DropSelectionTest, OneSelectionServesEveryRanking) {
  // The graph above, where exponents 1 and 1.5 take different drops. One
  // selection, asked in turn, answers each ranking as a selection made for
  // it alone does: a selection leaves its start as it found it.
  ThreeDrops d = makeThreeDrops({1, 2.1, 1.2}, {0, 1, 2});
  DropSelection shared(d.graph, MachineModel(), 31, /*earlyReruns=*/true);
  std::vector<std::vector<std::pair<OpId, TensorId>>> answers;
  for (DropRanking ranking :
       {DropRanking{1.0}, DropRanking{1.5}, DropRanking{1.0, true}}) {
    std::optional<ReplayOptions> alone =
        selectDrops(d.graph, MachineModel(), 31, ranking);
    std::optional<ReplayOptions> fromShared = shared.select(ranking);
    ASSERT_TRUE(alone.has_value() && fromShared.has_value());
    EXPECT_EQ(dropsIn(*fromShared), dropsIn(*alone));
    answers.push_back(dropsIn(*fromShared));
  }
  EXPECT_NE(answers[0], answers[1]);
}

TEST(DropSelectionTest, TheFastPlannerTriesRankingsSteeperThanOneAndAHalf) {
  // Costs a 1, b 2.85, c 1.9; b read first, then a, then c. Dropping b
  // alone (2.85) is cheaper than a and c (2.9), but only a ranking with an
  // exponent of 2 or more takes it: exponent 1.5 ranks a at 10^1.5 / 1 =
  // 31.6 over b at 20^1.5 / 2.85 = 31.4, then c (31.6 / 1.9 = 16.6) over b
  // (10^1.5 / 2.85 = 11.1, what is left of the excess); exponent 2 ranks b
  // at 400 / 2.85 = 140 over a at 100. The replay alone evicts a then c at T
  // (time per byte and second until the next read: a 1 / (5 * 3), c 1.9 /
  // (5 * 4), b 2.85 / (10 * 2)).
  ThreeDrops d = makeThreeDrops({1, 2.85, 1.9}, {1, 0, 2});
  ASSERT_FALSE(static_cast<bool>(d.graph.verify()));
  std::optional<ReplayOptions> steep =
      selectDrops(d.graph, MachineModel(), 31, {1.5});
  ASSERT_TRUE(steep.has_value());
  EXPECT_EQ(dropsIn(*steep),
            (std::vector<std::pair<OpId, TensorId>>{{d.makers[0], d.made[0]},
                                                    {d.makers[2], d.made[2]}}));
  llvm::Expected<Plan> plan = planFast(d.graph, 31, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  // The unplanned run costs 1 + 2.85 + 1.9 + 2 + 3 = 10.75; one rerun of B.
  EXPECT_NEAR(plan->simulation.overhead(), 2.85 / 10.75, 1e-9);
  EXPECT_LE(plan->simulation.peakBytes, 31u);
}
TEST(DropSelectionTest, RebuildsEarlyWhereTheInputsAreStillThere) {
  // P makes p (20 B) from parameter w (1 B) at cost 5; X makes x (10 B) from
  // p; B makes big (30 B), which C reads; Y reads p last; D makes d (30 B),
  // which E reads; U reads x. Outputs c, y, e and u are 1 B each. Every op
  // but P costs 1: 12 in all. Live while each op runs: P 21, X 31, B 61, C
  // 62, Y 33, D 43, E 44, U 15; a budget of 52 is 9 and 10 over at B and C.
  // Dropping x after X and rerunning X before U needs p, dead after Y:
  // keeping it until then puts D and E 1 and 2 over (x's 10 B go, p's 20
  // stay), and nothing else spans them; rebuilding p too costs 6, dropping
  // p instead 5. Rerunning X right before Y, where p is still read, costs 1
  // and leaves D and E as they are.
  PlanningGraph g;
  TensorId w = g.addTensor("w", 1, TensorCategory::Parameter, {});
  auto output = [&](OpId op, const char *name) {
    g.addTensor(name, 1, TensorCategory::Output, op);
  };
  OpId opP = g.addOp("P", 5);
  g.addUse(opP, w);
  TensorId p = g.addTensor("p", 20, TensorCategory::Activation, opP);
  OpId opX = g.addOp("X", 1);
  g.addUse(opX, p);
  TensorId x = g.addTensor("x", 10, TensorCategory::Activation, opX);
  // A 30 B tensor that the op after its maker reads, then an output.
  auto madeAndRead = [&](const char *maker, const char *name,
                         const char *reader, const char *out) {
    TensorId made =
        g.addTensor(name, 30, TensorCategory::Activation, g.addOp(maker, 1));
    OpId read = g.addOp(reader, 1);
    g.addUse(read, made);
    output(read, out);
  };
  madeAndRead("B", "big", "C", "c");
  OpId opY = g.addOp("Y", 1);
  g.addUse(opY, p);
  output(opY, "y");
  madeAndRead("D", "d", "E", "e");
  OpId opU = g.addOp("U", 1);
  g.addUse(opU, x);
  output(opU, "u");
  ASSERT_FALSE(static_cast<bool>(g.verify()));

  std::optional<ReplayOptions> early =
      selectDrops(g, MachineModel(), 52, {1.0, /*earlyReruns=*/true});
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ(dropsIn(*early),
            (std::vector<std::pair<OpId, TensorId>>{{opX, x}}));
  ASSERT_EQ(early->rebuildBefore.size(), g.numOps());
  EXPECT_EQ(early->rebuildBefore[opY], (llvm::SmallVector<TensorId, 1>{x}));

  llvm::Expected<Plan> plan = planFast(g, 52, MachineModel());
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  EXPECT_NEAR(plan->simulation.overhead(), 1.0 / 12, 1e-9);
  EXPECT_LE(plan->simulation.peakBytes, 52u);
}
} // namespace
