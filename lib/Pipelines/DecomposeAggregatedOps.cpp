//===- DecomposeAggregatedOps.cpp - vram-decompose-aggregated-ops ---------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "vram-decompose-aggregated-ops"

namespace vram {
#define GEN_PASS_DEF_DECOMPOSEAGGREGATEDOPSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct DecomposeAggregatedOpsPass
    : public vram::impl::DecomposeAggregatedOpsPassBase<
          DecomposeAggregatedOpsPass> {
  void runOnOperation() override {
    SmallVector<linalg::AggregatedOpInterface> aggregates;
    getOperation()->walk(
        [&](linalg::AggregatedOpInterface op) { aggregates.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::AggregatedOpInterface op : aggregates) {
      rewriter.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> replacements =
          op.decomposeOperation(rewriter);
      if (failed(replacements)) {
        op->emitOpError("cannot be decomposed into structured ops");
        return signalPassFailure();
      }
      rewriter.replaceOp(op, *replacements);
    }
  }
};
} // namespace
