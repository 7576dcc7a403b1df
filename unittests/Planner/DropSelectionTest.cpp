//===- DropSelectionTest.cpp - Drops chosen ahead, checked by hand --------===//
//
// A five-op chain in which the tensor worth dropping needs an input that is
// dead by the time it is rebuilt: w = W(in), x = X(w), y = Y(x), z = Z(y),
// out = U(x, z). Bytes: in 2, w 8, x 10, y 10, z 10, out 1; every op costs 1.
// Live bytes while each op runs, unplanned (a tensor goes after its last
// read): W 2+8 = 10, X 8+10 = 18, Y 10+10 = 20, Z 10+10+10 = 30, U 10+10+1
// = 21. Only x spans Z, in its gap between its reads by Y and U. `in` is
// kept to the end whatever is chosen: it cannot be recomputed, and w, made
// from it, can (PlanningGraph::lastOpNeeding).
//
//===----------------------------------------------------------------------===//

#include "DropSelection.h"

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
  std::vector<std::pair<OpId, TensorId>> drops;
  for (auto [op, tensors] : llvm::enumerate(options->dropAfter))
    for (TensorId t : tensors)
      drops.push_back({OpId(op), t});
  EXPECT_EQ(drops, (std::vector<std::pair<OpId, TensorId>>{{c.opY, c.x}}));
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
} // namespace
