//===- VramToBufferization.cpp - host copies as bufferization copies -----===//
//
// The vram-convert-vram-to-bufferization pass: a memory plan's offloads and
// prefetches become `bufferization.alloc_tensor` filled by
// `materialize_in_destination`, which One-Shot Bufferize turns into a fresh
// buffer plus `memref.copy`. On CPU host
// memory is ordinary memory, so this executes the plan's round trips for
// real; docs/planning.md says why the lowering sits at the tensor level.
// On GPU (option host-memory-space) host tensors, the offload's buffer and a
// planned step's host arguments and results, are put in a memory space of
// their own, which the GPU pipeline keeps in host memory.
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
/// `vram.offload` and `vram.prefetch` alike: a new tensor of the (converted)
/// result type in `memorySpace` (null: One-Shot Bufferize's default), filled
/// from the input by `materialize_in_destination`: a fresh buffer plus
/// `memref.copy` once bufferized, also between tensor types whose encodings
/// (memory spaces) differ, which `alloc_tensor ... copy` does not allow.
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
    auto alloc = bufferization::AllocTensorOp::create(
        rewriter, op.getLoc(), type, /*dynamicSizes=*/ValueRange());
    if (memorySpace)
      alloc.setMemorySpaceAttr(memorySpace);
    rewriter.replaceOpWithNewOp<bufferization::MaterializeInDestinationOp>(
        op, type, adaptor.getInput(), alloc.getResult());
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
    // With a host memory space, a host tensor carries it as its encoding,
    // which One-Shot Bufferize (use-encoding-for-memory-space) turns into
    // the memory space of its buffer, function arguments and results
    // included: a planned step's host arguments and results then stay host
    // buffers across the call instead of being copied to the device. The
    // prefetch's buffer names the default space (integer 0) explicitly.
    Attribute offloadSpace, prefetchSpace;
    if (!hostMemorySpace.empty()) {
      offloadSpace = StringAttr::get(context, hostMemorySpace);
      prefetchSpace = IntegerAttr::get(IntegerType::get(context, 64), 0);
    }
    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion([&](vram::HostTensorType type) -> Type {
      RankedTensorType tensor = type.getTensorType();
      if (!offloadSpace)
        return tensor;
      return RankedTensorType::get(tensor.getShape(), tensor.getElementType(),
                                   offloadSpace);
    });
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
