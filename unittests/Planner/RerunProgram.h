//===- RerunProgram.h - the hand-checked program of two planner tests -----===//
//
// p (2 B) is a parameter. Q makes q (4 B) from p; A makes a (10 B) from q;
// B makes b (10 B) from p; C makes the output c (1 B) from b; D makes the
// output d (1 B) from a. RerunPruningTest and RunGraphTest run it as Q, A,
// B, C, A, D: A rerun for D, so that a is gone while B and C run.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_UNITTESTS_PLANNER_RERUNPROGRAM_H
#define VRAM_UNITTESTS_PLANNER_RERUNPROGRAM_H

#include "vram/Planner/PlanningGraph.h"

namespace vram::planner {

struct RerunProgram {
  PlanningGraph graph;
  OpId opQ, opA, opB, opC, opD;
};

inline RerunProgram makeRerunProgram() {
  RerunProgram p;
  PlanningGraph &g = p.graph;
  TensorId param = g.addTensor("p", 2, TensorCategory::Parameter, {});
  p.opQ = g.addOp("Q", 1);
  g.addUse(p.opQ, param);
  TensorId q = g.addTensor("q", 4, TensorCategory::Activation, p.opQ);
  p.opA = g.addOp("A", 1);
  g.addUse(p.opA, q);
  TensorId a = g.addTensor("a", 10, TensorCategory::Activation, p.opA);
  p.opB = g.addOp("B", 1);
  g.addUse(p.opB, param);
  TensorId b = g.addTensor("b", 10, TensorCategory::Activation, p.opB);
  p.opC = g.addOp("C", 1);
  g.addUse(p.opC, b);
  g.addTensor("c", 1, TensorCategory::Output, p.opC);
  p.opD = g.addOp("D", 1);
  g.addUse(p.opD, a);
  g.addTensor("d", 1, TensorCategory::Output, p.opD);
  return p;
}

} // namespace vram::planner

#endif // VRAM_UNITTESTS_PLANNER_RERUNPROGRAM_H
