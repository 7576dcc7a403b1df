//===- DeviceMemory.cpp - the vram-gpu-device-memory pass -----------------===//
//
// Moves the buffers of a bufferized function into GPU device memory. The
// scheme is explicit copies at the function boundary rather than mapped
// (host-registered) memory: kernels then read and write device memory at
// full bandwidth, the arena and the planner's byte counts describe device
// memory exactly, and the caller keeps ordinary host memrefs.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "vram-gpu-device-memory"

namespace vram {
#define GEN_PASS_DEF_GPUDEVICEMEMORYPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// Whether anything but `initializer` may write the buffer `value` or a view
/// of it. Ops that do not describe their effects count as writers.
static bool mayBeWritten(Value value, Operation *initializer) {
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (OpOperand &use : current.getUses()) {
      Operation *user = use.getOwner();
      if (user == initializer)
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == current) {
        llvm::append_range(worklist, user->getResults());
        continue;
      }
      auto effects = dyn_cast<MemoryEffectOpInterface>(user);
      if (!effects)
        return true;
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      for (const MemoryEffects::EffectInstance &instance : instances)
        if (isa<MemoryEffects::Write>(instance.getEffect()) &&
            (!instance.getValue() || instance.getValue() == current))
          return true;
    }
  }
  return false;
}

/// Copies to host memory and frees are only possible on identity layouts:
/// `gpu.memcpy` copies one contiguous range.
static LogicalResult checkContiguous(Operation *op, MemRefType type,
                                     StringRef what) {
  if (type.getLayout().isIdentity())
    return success();
  return op->emitError() << what << " of type " << type
                         << " is not contiguous (identity layout); it cannot "
                            "be copied between host and device";
}

/// Whether `type` is a memref in `memorySpace`.
static bool isInMemorySpace(Type type, Attribute memorySpace) {
  auto memref = dyn_cast<BaseMemRefType>(type);
  return memref && memref.getMemorySpace() == memorySpace;
}

/// `type` in the default memory space.
static Type withoutMemorySpace(Type type) {
  if (auto ranked = dyn_cast<MemRefType>(type))
    return MemRefType::Builder(ranked).setMemorySpace(Attribute());
  auto unranked = cast<UnrankedMemRefType>(type);
  return UnrankedMemRefType::get(unranked.getElementType(), Attribute());
}

/// Moves every value of `func` in `hostSpace` to the default memory space,
/// which is where the LLVM lowering expects host memory, and returns those
/// values. The memory space has done its job once this pass knows them.
/// Arguments and results in it (a planned step's host arguments and
/// results) are host memory of the caller's, as in the signature.
static llvm::DenseSet<Value> takeHostMemorySpace(func::FuncOp func,
                                                 Attribute hostSpace) {
  auto isHost = [&](Type type) { return isInMemorySpace(type, hostSpace); };
  auto strip = [&](Type type) {
    return isHost(type) ? withoutMemorySpace(type) : type;
  };
  FunctionType signature = func.getFunctionType();
  func.setType(FunctionType::get(
      func.getContext(), llvm::map_to_vector(signature.getInputs(), strip),
      llvm::map_to_vector(signature.getResults(), strip)));
  llvm::DenseSet<Value> hostValues;
  auto take = [&](Value value) {
    if (!isHost(value.getType()))
      return;
    value.setType(withoutMemorySpace(value.getType()));
    hostValues.insert(value);
  };
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      take(result);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          take(argument);
  });
  return hostValues;
}

/// Page-locks (`lock`) or unlocks a host buffer, so that copies from and to
/// it run at full bandwidth and asynchronously to the host.
static void setPageLocked(OpBuilder &builder, Location loc, Value buffer,
                          bool lock) {
  auto type = cast<MemRefType>(buffer.getType());
  Value unranked = memref::CastOp::create(
      builder, loc, UnrankedMemRefType::get(type.getElementType(), Attribute()),
      buffer);
  if (lock)
    gpu::HostRegisterOp::create(builder, loc, unranked);
  else
    gpu::HostUnregisterOp::create(builder, loc, unranked);
}

static LogicalResult moveToDeviceMemory(func::FuncOp func,
                                        Attribute hostSpace) {
  llvm::DenseSet<Value> hostValues = takeHostMemorySpace(func, hostSpace);
  // Device buffers this pass creates, to free before each return unless
  // something already frees them; pinned host buffers likewise.
  llvm::SetVector<Value> ownedBuffers;
  llvm::SetVector<Value> hostBuffers;
  OpBuilder builder(func.getContext());
  Block &entry = func.getBody().front();

  // Host allocations, frees, globals and copies outside kernels.
  SmallVector<Operation *> hostOps;
  func.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::LaunchOp>())
      return;
    if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
            memref::GetGlobalOp, memref::CopyOp>(op))
      hostOps.push_back(op);
  });
  auto isHostBuffer = [&](Value value) { return hostValues.contains(value); };
  for (Operation *op : hostOps) {
    builder.setInsertionPoint(op);
    Location loc = op->getLoc();
    // Pinned host memory (offloaded tensors) stays on the host.
    if (auto alloc = dyn_cast<memref::AllocOp>(op);
        alloc && isHostBuffer(alloc.getMemref())) {
      builder.setInsertionPointAfter(alloc);
      setPageLocked(builder, loc, alloc.getMemref(), /*lock=*/true);
      hostBuffers.insert(alloc.getMemref());
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op);
               dealloc && isHostBuffer(dealloc.getMemref())) {
      setPageLocked(builder, loc, dealloc.getMemref(), /*lock=*/false);
    } else if (auto copy = dyn_cast<memref::CopyOp>(op);
               copy && llvm::any_of(copy->getOperands(), isHostBuffer)) {
      // Between host and device: one contiguous range each way.
      if (failed(checkContiguous(op,
                                 cast<MemRefType>(copy.getSource().getType()),
                                 "copy source")) ||
          failed(checkContiguous(
              op, cast<MemRefType>(copy.getTarget().getType()), "copy target")))
        return failure();
      gpu::MemcpyOp::create(builder, loc, Type(), ValueRange(),
                            copy.getTarget(), copy.getSource());
      copy.erase();
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      auto device = gpu::AllocOp::create(
          builder, loc, alloc.getType(), /*asyncToken=*/Type(),
          /*asyncDependencies=*/ValueRange(), alloc.getDynamicSizes(),
          alloc.getSymbolOperands());
      alloc.replaceAllUsesWith(device.getMemref());
      alloc.erase();
      ownedBuffers.insert(device.getMemref());
    } else if (isa<memref::AllocaOp>(op)) {
      // A stack buffer on the host is not reachable from a kernel.
      return op->emitError("stack allocation (memref.alloca) outside a "
                           "kernel cannot be placed in device memory");
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      gpu::DeallocOp::create(builder, loc, /*asyncToken=*/Type(), ValueRange(),
                             dealloc.getMemref());
      dealloc.erase();
    } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      MemRefType type = global.getType();
      if (failed(checkContiguous(op, type, "global")))
        return failure();
      builder.setInsertionPointAfter(global);
      auto device = gpu::AllocOp::create(
          builder, loc, type, Type(), ValueRange(), ValueRange(), ValueRange());
      global.getResult().replaceAllUsesWith(device.getMemref());
      gpu::MemcpyOp::create(builder, loc, Type(), ValueRange(),
                            device.getMemref(), global.getResult());
      ownedBuffers.insert(device.getMemref());
    } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
      linalg::CopyOp::create(builder, loc, copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }

  // Arguments: copied in at entry, and back at each return if written;
  // host arguments stay where the caller has them, for copies to read.
  SmallVector<std::pair<BlockArgument, Value>> writtenArguments;
  builder.setInsertionPointToStart(&entry);
  for (BlockArgument argument : entry.getArguments()) {
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!type)
      continue;
    if (failed(checkContiguous(func, type, "argument")))
      return failure();
    if (isHostBuffer(argument)) {
      for (Operation *user : argument.getUsers())
        if (!isa<gpu::MemcpyOp>(user))
          return user->emitError("a host argument may only be copied (a "
                                 "kernel cannot read host memory)");
      continue;
    }
    Location loc = argument.getLoc();
    auto device = gpu::AllocOp::create(builder, loc, type, Type(), ValueRange(),
                                       ValueRange(), ValueRange());
    auto copyIn = gpu::MemcpyOp::create(builder, loc, Type(), ValueRange(),
                                        device.getMemref(), argument);
    argument.replaceAllUsesExcept(device.getMemref(), copyIn);
    ownedBuffers.insert(device.getMemref());
    if (mayBeWritten(device.getMemref(), copyIn))
      writtenArguments.push_back({argument, device.getMemref()});
  }

  // A buffer freed by the program itself is not freed again at exit. An
  // allocation outside the entry block without a free would leak on every
  // execution of its region: that is an error, not something to paper over.
  SmallVector<Value> freedAtExit;
  for (Value buffer : ownedBuffers) {
    if (llvm::any_of(buffer.getUsers(),
                     [](Operation *user) { return isa<gpu::DeallocOp>(user); }))
      continue;
    if (buffer.getParentBlock() != &entry)
      return buffer.getDefiningOp()->emitError(
          "allocation outside the function's entry block is never freed");
    freedAtExit.push_back(buffer);
  }
  // A pinned host buffer that is returned (a host result) is unpinned at
  // the return and left to the caller; any other is freed there.
  SmallVector<Value> hostFreedAtExit, hostReturned;
  for (Value buffer : hostBuffers) {
    if (llvm::any_of(buffer.getUsers(), [](Operation *user) {
          return isa<memref::DeallocOp>(user);
        }))
      continue;
    if (llvm::any_of(buffer.getUsers(), [](Operation *user) {
          return isa<func::ReturnOp>(user);
        })) {
      hostReturned.push_back(buffer);
      continue;
    }
    if (buffer.getParentBlock() != &entry)
      return buffer.getDefiningOp()->emitError(
          "allocation outside the function's entry block is never freed");
    hostFreedAtExit.push_back(buffer);
  }

  SmallVector<func::ReturnOp> returns;
  func.walk([&](func::ReturnOp op) { returns.push_back(op); });
  for (func::ReturnOp ret : returns) {
    builder.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    for (OpOperand &operand : ret->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type || isHostBuffer(operand.get()))
        continue;
      if (failed(checkContiguous(ret, type, "result")))
        return failure();
      SmallVector<Value> dynamicSizes;
      for (auto [dim, size] : llvm::enumerate(type.getShape()))
        if (ShapedType::isDynamic(size))
          dynamicSizes.push_back(
              memref::DimOp::create(builder, loc, operand.get(), dim));
      auto host = memref::AllocOp::create(builder, loc, type, dynamicSizes);
      gpu::MemcpyOp::create(builder, loc, Type(), ValueRange(), host,
                            operand.get());
      operand.set(host);
    }
    for (auto [argument, device] : writtenArguments)
      gpu::MemcpyOp::create(builder, loc, Type(), ValueRange(), argument,
                            device);
    for (Value buffer : freedAtExit)
      gpu::DeallocOp::create(builder, loc, Type(), ValueRange(), buffer);
    for (Value buffer : hostFreedAtExit) {
      setPageLocked(builder, loc, buffer, /*lock=*/false);
      memref::DeallocOp::create(builder, loc, buffer);
    }
    for (Value buffer : hostReturned)
      setPageLocked(builder, loc, buffer, /*lock=*/false);
  }
  return success();
}

namespace {
struct GPUDeviceMemoryPass
    : public vram::impl::GPUDeviceMemoryPassBase<GPUDeviceMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (failed(moveToDeviceMemory(
            func, StringAttr::get(&getContext(), hostMemorySpace))))
      signalPassFailure();
  }
};
} // namespace
