//===- VramToBufferization.cpp - host copies as bufferization copies -----===//
//
// The vram-convert-vram-to-bufferization pass: a memory plan's offloads and
// prefetches become `bufferization.alloc_tensor ... copy(...)`, which One-Shot
// Bufferize always turns into a fresh buffer plus `memref.copy`. On CPU host
// memory is ordinary memory, so this executes the plan's round trips for
// real; docs/planning.md says why the lowering sits at the tensor level.
// On GPU (option host-memory-space) the offload's buffer is put in a memory
// space of its own, which the GPU pipeline places in pinned host memory.
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
/// shares no buffer with its source, of the (converted) result type, in
/// `memorySpace` (null: One-Shot Bufferize's choice, the source's).
template <typename CopyOp>
struct HostCopyToAllocTensor : public OpConversionPattern<CopyOp> {
  HostCopyToAllocTensor(const TypeConverter &converter, MLIRContext *context,
                        Attribute memorySpace)
      : OpConversionPattern<CopyOp>(converter, context),
        memorySpace(memorySpace) {}
  using OpAdaptor = typename CopyOp::Adaptor;

  LogicalResult
  matchAndRewrite(CopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast_or_null<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "result is not a ranked tensor");
    auto alloc = rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
        op, type, /*dynamicSizes=*/ValueRange(), adaptor.getInput());
    if (memorySpace)
      alloc.setMemorySpaceAttr(memorySpace);
    return success();
  }

  Attribute memorySpace;
};

struct ConvertVramToBufferizationPass
    : public vram::impl::ConvertVramToBufferizationPassBase<
          ConvertVramToBufferizationPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion(
        [](vram::HostTensorType type) -> Type { return type.getTensorType(); });

    // With a host memory space, the prefetch's copy must name the default
    // space (integer 0) explicitly: left open, it would inherit the host
    // space of the buffer it copies.
    Attribute offloadSpace, prefetchSpace;
    if (!hostMemorySpace.empty()) {
      offloadSpace = StringAttr::get(context, hostMemorySpace);
      prefetchSpace = IntegerAttr::get(IntegerType::get(context, 64), 0);
    }
    RewritePatternSet patterns(context);
    patterns.add<HostCopyToAllocTensor<vram::OffloadOp>>(converter, context,
                                                         offloadSpace);
    patterns.add<HostCopyToAllocTensor<vram::PrefetchOp>>(converter, context,
                                                          prefetchSpace);
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
