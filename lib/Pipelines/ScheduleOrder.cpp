//===- ScheduleOrder.cpp - what the tensor-level rewrites may move -------===//

#include "ScheduleOrder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

bool vram::runsRightAfter(Operation *earlier, Operation *later) {
  if (earlier->getBlock() != later->getBlock())
    return false;
  constexpr unsigned kLookahead = 16;
  unsigned seen = 0;
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode()) {
    if (!op || ++seen > kLookahead || isa<linalg::LinalgOp>(op) ||
        !isMemoryEffectFree(op))
      return false;
  }
  return true;
}
