//===- LowerSCFToCF.cpp - vram-scf-to-cf ----------------------------------===//
//
// Upstream's SCF-to-CF patterns, driven last op first (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Iterators.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/PatternApplicator.h"

#define DEBUG_TYPE "vram-scf-to-cf"

namespace vram {
#define GEN_PASS_DEF_LOWERSCFTOCFPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct LowerSCFToCFPass
    : public vram::impl::LowerSCFToCFPassBase<LowerSCFToCFPass> {
  void runOnOperation() override;
};

/// Applies the patterns to each op of types `OpTys` under `root`: an op
/// before the ops nested in it (upstream's patterns expect single-block
/// regions), and in a block the last op first, so that a block split moves
/// only the ops up to the next, already lowered, one. Repeats while the
/// rewrites create more such ops (scf.forall -> scf.parallel -> scf.for).
/// The rewrites move nested ops into the parent region, never erase them.
template <typename... OpTys>
LogicalResult lowerLastFirst(Operation *root, PatternApplicator &applicator,
                             PatternRewriter &rewriter) {
  for (;;) {
    SmallVector<Operation *> ops;
    root->walk<WalkOrder::PreOrder, ReverseIterator>([&](Operation *op) {
      if (isa<OpTys...>(op))
        ops.push_back(op);
    });
    if (ops.empty())
      return success();
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      if (failed(applicator.matchAndRewrite(op, rewriter)))
        return op->emitOpError("cannot be lowered to control flow");
    }
  }
}

void LowerSCFToCFPass::runOnOperation() {
  RewritePatternSet patterns(&getContext());
  populateSCFToControlFlowConversionPatterns(patterns);
  FrozenRewritePatternSet frozen(std::move(patterns));
  PatternApplicator applicator(frozen);
  applicator.applyDefaultCostModel();
  PatternRewriter rewriter(&getContext());
  // Parallel loops become scf.for nests first, before any body is split.
  if (failed(lowerLastFirst<scf::ForallOp, scf::ParallelOp>(
          getOperation(), applicator, rewriter)) ||
      failed(lowerLastFirst<scf::ForOp, scf::IfOp, scf::WhileOp,
                            scf::IndexSwitchOp, scf::ExecuteRegionOp>(
          getOperation(), applicator, rewriter)))
    signalPassFailure();
}
} // namespace
