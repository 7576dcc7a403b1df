//===- OverlapCopies.cpp - the vram-gpu-overlap-copies pass ---------------===//
//
// A plan's offloads and prefetches on the runtime's copy stream, so that they
// run while the kernels between a copy and the first op that needs it done
// compute (docs/gpu.md, "Offload and prefetch").
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"
#include "vram/Conversion/RuntimeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace vram {
#define GEN_PASS_DEF_GPUOVERLAPCOPIESPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
/// Where a buffer lies: the allocation it is a view of and, when known, the
/// bytes of it the view spans.
struct Placement {
  Value allocation;
  std::optional<std::pair<int64_t, int64_t>> bytes;

  /// Whether the two may share a byte.
  bool mayOverlap(const Placement &other) const {
    if (allocation != other.allocation)
      return false;
    if (!bytes || !other.bytes)
      return true;
    return bytes->first < other.bytes->second &&
           other.bytes->first < bytes->second;
  }
};
} // namespace

/// The placement of `buffer`: through views to the allocation, with the byte
/// range of a `memref.view` at a constant offset (a subview or a cast of one
/// keeps the whole view's range, a superset).
static Placement getPlacement(Value buffer) {
  Placement placement{buffer, std::nullopt};
  while (Operation *def = placement.allocation.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      auto type = view.getType();
      std::optional<int64_t> offset = getConstantIntValue(view.getByteShift());
      if (!placement.bytes && offset && type.hasStaticShape() &&
          type.getElementType().isIntOrFloat())
        placement.bytes = {
            *offset, *offset + type.getNumElements() *
                                   int64_t(type.getElementTypeBitWidth() / 8)};
      placement.allocation = view.getSource();
      continue;
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      break;
    placement.allocation = viewLike.getViewSource();
  }
  return placement;
}

/// A pinned host buffer: a view of a `memref.alloc` that `gpu.host_register`
/// pins (vram-gpu-device-memory's arena of offloaded tensors).
static bool isPinnedHostBuffer(const Placement &placement) {
  if (!placement.allocation.getDefiningOp<memref::AllocOp>())
    return false;
  return llvm::any_of(placement.allocation.getUsers(), [](Operation *user) {
    auto cast = dyn_cast<memref::CastOp>(user);
    return cast && llvm::any_of(cast->getUsers(), [](Operation *castUser) {
             return isa<gpu::HostRegisterOp>(castUser);
           });
  });
}

/// Whether `op` or anything nested in it reads, writes or frees a buffer
/// placed where `placement` may be (making a view of one touches nothing).
static bool touches(Operation *op, const Placement &placement) {
  WalkResult result = op->walk([&](Operation *nested) {
    if (isa<ViewLikeOpInterface>(nested))
      return WalkResult::advance();
    for (Value operand : nested->getOperands())
      if (isa<BaseMemRefType>(operand.getType()) &&
          getPlacement(operand).mayOverlap(placement))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

namespace {
/// The two sides of a plan's copy.
struct PlanCopy {
  Placement device, host;
  bool isOffload;
};
} // namespace

/// The sides of `copy` when it is a plan's offload or prefetch that can go
/// on the copy stream: between a view at a constant offset of a device
/// allocation and a pinned host buffer, of a static shape.
static std::optional<PlanCopy> getPlanCopy(gpu::MemcpyOp copy) {
  if (copy.getAsyncToken() || !copy.getAsyncDependencies().empty())
    return std::nullopt;
  Placement destination = getPlacement(copy.getDst());
  Placement source = getPlacement(copy.getSrc());
  bool isOffload = isPinnedHostBuffer(destination);
  if (isOffload == isPinnedHostBuffer(source))
    return std::nullopt;
  PlanCopy planCopy{isOffload ? source : destination,
                    isOffload ? destination : source, isOffload};
  auto type = cast<MemRefType>(copy.getDst().getType());
  if (!planCopy.device.bytes ||
      !planCopy.device.allocation.getDefiningOp<gpu::AllocOp>() ||
      !type.hasStaticShape() || !type.getLayout().isIdentity())
    return std::nullopt;
  return planCopy;
}

namespace {
struct GPUOverlapCopiesPass
    : public vram::impl::GPUOverlapCopiesPassBase<GPUOverlapCopiesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<gpu::MemcpyOp, PlanCopy>> copies;
    module.walk([&](gpu::MemcpyOp copy) {
      if (std::optional<PlanCopy> planCopy = getPlanCopy(copy))
        copies.push_back({copy, *planCopy});
    });
    SymbolTableCollection symbols;
    for (auto &[copy, planCopy] : copies)
      if (failed(overlap(copy, planCopy, symbols)))
        return signalPassFailure();
  }

  /// `copy` becomes an asynchronous copy on the copy stream, and the host
  /// waits for it right before the first later op in its block that
  /// touches either side's bytes (the prefetched tensor's first reader; for
  /// an offload, whatever reuses its device bytes; the host arena's
  /// release), or before the block's terminator. Later plan copies do not
  /// count: the copy stream runs them in order.
  LogicalResult overlap(gpu::MemcpyOp copy, const PlanCopy &planCopy,
                        SymbolTableCollection &symbols) {
    const Placement &device = planCopy.device, &host = planCopy.host;
    bool isOffload = planCopy.isOffload;

    OpBuilder builder(copy);
    Location loc = copy.getLoc();
    auto pointerType = LLVM::LLVMPointerType::get(&getContext());
    auto pointerTo = [&](Value buffer) -> Value {
      Value address =
          memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, buffer);
      Value integer = arith::IndexCastOp::create(builder, loc,
                                                 builder.getI64Type(), address);
      return LLVM::IntToPtrOp::create(builder, loc, pointerType, integer);
    };
    Value bytes = arith::ConstantOp::create(
        builder, loc,
        builder.getI64IntegerAttr(device.bytes->second - device.bytes->first));
    // The host has waited for the compute stream before this call
    // (gpu-async-region, before every call it cannot see into): the copy
    // needs no stream to follow.
    Value noStream = LLVM::ZeroOp::create(builder, loc, pointerType);
    FailureOr<func::FuncOp> start = vram::getRuntimeFunction(
        getOperation(),
        isOffload ? "vramRuntimeOffloadAsync" : "vramRuntimePrefetchAsync",
        builder.getFunctionType(
            {pointerType, pointerType, builder.getI64Type(), pointerType},
            {pointerType}),
        /*cInterface=*/false, symbols);
    if (failed(start))
      return failure();
    Value event = func::CallOp::create(builder, loc, *start,
                                       ValueRange{pointerTo(copy.getDst()),
                                                  pointerTo(copy.getSrc()),
                                                  bytes, noStream})
                      .getResult(0);

    Operation *waitBefore = copy->getBlock()->getTerminator();
    for (Operation *op = copy->getNextNode(); op != waitBefore;
         op = op->getNextNode()) {
      auto laterCopy = dyn_cast<gpu::MemcpyOp>(op);
      if (laterCopy && getPlanCopy(laterCopy))
        continue;
      if (touches(op, device) || touches(op, host)) {
        waitBefore = op;
        break;
      }
    }
    builder.setInsertionPoint(waitBefore);
    FailureOr<func::FuncOp> finish =
        vram::getRuntimeFunction(getOperation(), "vramRuntimeFinishCopy",
                                 builder.getFunctionType({pointerType}, {}),
                                 /*cInterface=*/false, symbols);
    if (failed(finish))
      return failure();
    func::CallOp::create(builder, loc, *finish, ValueRange{event});
    copy.erase();
    return success();
  }
};
} // namespace
