//===- VramToBufferization.cpp - host copies as bufferization copies -----===//
//
// The vram-convert-vram-to-bufferization pass: a memory plan's offloads and
// prefetches become `bufferization.alloc_tensor ... copy(...)`, which One-Shot
// Bufferize always turns into a fresh buffer plus `memref.copy`. On CPU host
// memory is ordinary memory, so this executes the plan's round trips for
// real; docs/planning.md says why the lowering sits at the tensor level.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

#define DEBUG_TYPE "vram-convert-vram-to-bufferization"

namespace vram {
#define GEN_PASS_DEF_CONVERTVRAMTOBUFFERIZATIONPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
/// `vram.offload` and `vram.prefetch` alike: a copy into a new tensor that
/// shares no buffer with its source, of the (converted) result type.
template <typename CopyOp>
struct HostCopyToAllocTensor : public OpConversionPattern<CopyOp> {
  using OpConversionPattern<CopyOp>::OpConversionPattern;
  using OpAdaptor = typename CopyOp::Adaptor;

  LogicalResult
  matchAndRewrite(CopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast_or_null<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "result is not a ranked tensor");
    rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
        op, type, /*dynamicSizes=*/ValueRange(), adaptor.getInput());
    return success();
  }
};

struct ConvertVramToBufferizationPass
    : public vram::impl::ConvertVramToBufferizationPassBase<
          ConvertVramToBufferizationPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [](vram::HostTensorType type) -> Type { return type.getTensorType(); });

    RewritePatternSet patterns(context);
    patterns.add<HostCopyToAllocTensor<vram::OffloadOp>,
                 HostCopyToAllocTensor<vram::PrefetchOp>>(converter, context);
    // A host value may cross a function boundary like any value.
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*context);
    target.addIllegalOp<vram::OffloadOp, vram::PrefetchOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType());
    });
    // Any other op is legal unless it carries a host value; calls and
    // returns are retyped by the patterns above, anything else (a branch, a
    // select) is an error.
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
