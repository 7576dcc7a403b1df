//===- PadInPlace.cpp - vram-pad-in-place ---------------------------------===//
//
// A padded tensor's producer writes straight into the interior of the padded
// buffer, so that bufferization copies nothing (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "ScheduleOrder.h"
#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace vram {
#define GEN_PASS_DEF_PADINPLACEPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
/// tensor.pad of a constant around the only use of a linalg op's result,
/// whose destination is a tensor.empty, becomes
///   %padded = linalg.fill ins(%value) outs(tensor.empty)
///   %interior = tensor.extract_slice %padded[low][sizes][1]
///   %result = <the producer, with destination %interior>
///   tensor.insert_slice %result into %padded[low][sizes][1]
/// which one-shot bufferization computes in place: the producer writes the
/// padded buffer's interior, and inserting a slice into the very subset it
/// was extracted from copies nothing.
struct WriteIntoPaddedTensor : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp pad,
                                PatternRewriter &rewriter) const override {
    TypedAttr padding;
    Value paddingValue = pad.getConstantPaddingValue();
    if (!paddingValue || !matchPattern(paddingValue, m_Constant(&padding)) ||
        !pad.getResultType().hasStaticShape())
      return rewriter.notifyMatchFailure(pad, "not a static constant padding");
    auto source = dyn_cast<OpResult>(pad.getSource());
    auto producer =
        source ? dyn_cast<linalg::LinalgOp>(source.getOwner()) : nullptr;
    if (!producer || !source.hasOneUse())
      return rewriter.notifyMatchFailure(pad, "no single-use linalg producer");
    // The padded buffer is live from the producer on: an earlier producer
    // would hold it across ops a memory plan placed in between.
    if (!vram::runsRightAfter(producer, pad))
      return rewriter.notifyMatchFailure(pad, "producer runs earlier");
    OpOperand *destination = producer.getTiedOpOperand(source);
    if (!destination->get().getDefiningOp<tensor::EmptyOp>())
      return rewriter.notifyMatchFailure(pad, "producer does not fill an empty");

    Location loc = pad.getLoc();
    RankedTensorType paddedType = pad.getResultType();
    rewriter.setInsertionPoint(producer);
    Value value = arith::ConstantOp::create(rewriter, loc, padding);
    Value empty = tensor::EmptyOp::create(rewriter, loc, paddedType.getShape(),
                                          paddedType.getElementType());
    Value padded =
        linalg::FillOp::create(rewriter, loc, value, empty).getResult(0);
    SmallVector<OpFoldResult> offsets = pad.getMixedLowPad();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, pad.getSource());
    SmallVector<OpFoldResult> strides(offsets.size(),
                                      rewriter.getIndexAttr(1));
    Value interior = tensor::ExtractSliceOp::create(rewriter, loc, padded,
                                                    offsets, sizes, strides);
    rewriter.modifyOpInPlace(producer, [&] { destination->set(interior); });
    rewriter.setInsertionPoint(pad);
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        pad, source, padded, offsets, sizes, strides);
    return success();
  }
};

struct PadInPlacePass
    : public vram::impl::PadInPlacePassBase<PadInPlacePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WriteIntoPaddedTensor>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
