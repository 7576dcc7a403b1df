//===- FuseElementwiseOps.cpp - vram-fuse-elementwise-ops -----------------===//
//
// Upstream's elementwise fusion of linalg.generic ops on tensors, under a
// control that keeps it from repeating work (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "ScheduleOrder.h"
#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace vram {
#define GEN_PASS_DEF_FUSEELEMENTWISEOPSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// Fuses the producer of `operand` into its consumer when nothing is
/// computed twice and the schedule stays: the result has no other use
/// (which would need it too), the consumer reads each of its elements once
/// (a permutation map; a broadcast read, such as a per-channel scale applied
/// over an image, would rerun the producer at every element it is broadcast
/// to), and the consumer runs right after the producer (fused further away,
/// the producer's inputs would stay live until the consumer runs, across
/// whatever a memory plan put in between); and while the fused body holds
/// at most `maxBodyOps` operations (see Passes.td).
static bool fusesInPlace(OpOperand *operand, unsigned maxBodyOps) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  auto bodySize = [](linalg::GenericOp op) {
    return op.getBody()->getOperations().size();
  };
  return producer && consumer && producer->hasOneUse() &&
         consumer.getMatchingIndexingMap(operand).isPermutation() &&
         vram::runsRightAfter(producer, consumer) &&
         bodySize(producer) + bodySize(consumer) <= maxBodyOps;
}

namespace {
struct FuseElementwiseOpsPass
    : public vram::impl::FuseElementwiseOpsPassBase<FuseElementwiseOpsPass> {
  using FuseElementwiseOpsPassBase::FuseElementwiseOpsPassBase;
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(
        patterns,
        [&](OpOperand *operand) { return fusesInPlace(operand, maxBodyOps); });
    // Drops the operands and results a fusion leaves unused or repeated.
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    // Not upstream's replacement of an init the body does not read by a
    // tensor.empty: bufferization then allocates where the op was built to
    // write in place, as the memory analysis counts it (a master-weight
    // update's half parameter: GPT-3 175B's step lowered 349 GB over its
    // plan, one fresh buffer per parameter). Without it an unread init is
    // still not copied, and written in place where nothing reads it after.
    FrozenRewritePatternSet frozen(
        std::move(patterns),
        /*disabledPatternLabels=*/{
            "(anonymous namespace)::RemoveOutsDependency"});
    // A fusion can make the next pair run back to back (fusesInPlace), so
    // chains take one round each: GPT-2-small's training step needs more
    // than the default 10, and the pass used to fail there without a word
    // (the step then never lowered, nor was its arena checked). Every
    // pattern here removes an op or an operand, so the rounds end; the cap
    // only bounds the time, and stopping there leaves valid IR, fused less.
    GreedyRewriteConfig config;
    config.setMaxIterations(1000);
    (void)applyPatternsGreedily(getOperation(), frozen, config);
  }
};
} // namespace
