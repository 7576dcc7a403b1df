//===- MapParallelLoops.cpp - the vram-gpu-map-parallel-loops pass --------===//
//
// Decides which loops of a function become which GPU kernels, and how their
// iterations spread over blocks and threads, by setting the mapping
// attributes that upstream `convert-parallel-loops-to-gpu` reads.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <numeric>

#define DEBUG_TYPE "vram-gpu-map-parallel-loops"

namespace vram {
#define GEN_PASS_DEF_GPUMAPPARALLELLOOPSPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// Maps every dimension of `loop` to `processors` (one per dimension).
static void setMapping(scf::ParallelOp loop,
                       ArrayRef<gpu::Processor> processors) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (gpu::Processor processor : processors)
    mapping.push_back(gpu::ParallelLoopDimMappingAttr::get(context, processor,
                                                           identity, identity));
  // The mapping is built valid (one processor per dimension, no processor
  // twice but Sequential), so this cannot fail.
  (void)gpu::setMappingAttr(loop, mapping);
}

/// Replaces `loop`, which has no reductions, by a nest of `scf.for`.
static void serializeParallelLoop(scf::ParallelOp loop) {
  OpBuilder builder(loop);
  for (auto [inductionVar, lower, upper, step] :
       llvm::zip(loop.getInductionVars(), loop.getLowerBound(),
                 loop.getUpperBound(), loop.getStep())) {
    auto serial =
        scf::ForOp::create(builder, loop.getLoc(), lower, upper, step);
    inductionVar.replaceAllUsesWith(serial.getInductionVar());
    builder.setInsertionPoint(serial.getBody()->getTerminator());
  }
  for (Operation &op :
       llvm::make_early_inc_range(loop.getBody()->without_terminator()))
    op.moveBefore(builder.getInsertionBlock(), builder.getInsertionPoint());
  loop.erase();
}

/// Runs every parallel loop nested in `root` sequentially inside the thread
/// that executes `root`. Loops without reductions become `scf.for` nests:
/// upstream's sequential mapping reaches only parallel loops nested directly
/// in a mapped one, not those under an `scf.for` (a reduction over an outer
/// dimension is `scf.for { scf.parallel }`), which would stay unconverted
/// and end up as host code reading device memory.
static void runNestedLoopsSequentially(Operation *root) {
  SmallVector<scf::ParallelOp> nestedLoops;
  root->walk([&](scf::ParallelOp nested) {
    if (nested != root)
      nestedLoops.push_back(nested);
  });
  // Post-order: inner loops first, so no loop moves before it is visited.
  for (scf::ParallelOp nested : nestedLoops) {
    if (nested.getNumResults() == 0)
      serializeParallelLoop(nested);
    else
      setMapping(nested, SmallVector<gpu::Processor>(
                             nested.getNumLoops(), gpu::Processor::Sequential));
  }
}

/// Collapses `loop` to one dimension and tiles it: tiles → blocks, the
/// iterations of a tile → threads.
static void mapParallelLoop(scf::ParallelOp loop, int64_t blockSize) {
  if (loop.getNumLoops() > 1) {
    // collapseParallelLoops replaces the loop in place; its successor finds
    // the new one.
    Operation *next = loop->getNextNode();
    std::vector<unsigned> allDimensions(loop.getNumLoops());
    std::iota(allDimensions.begin(), allDimensions.end(), 0);
    IRRewriter rewriter(loop.getContext());
    rewriter.setInsertionPoint(loop);
    collapseParallelLoops(rewriter, loop, {allDimensions});
    loop = cast<scf::ParallelOp>(next->getPrevNode());
  }
  // A loop smaller than a block gets a block of its size, rounded up to a
  // warp: no block of idle threads for a 10-element bias.
  int64_t tileSize = blockSize;
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[0]);
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[0]);
  if (lower && upper && step && *step > 0) {
    int64_t tripCount = llvm::divideCeil(*upper - *lower, *step);
    tileSize = std::min<int64_t>(
        blockSize, llvm::alignTo(std::max<int64_t>(tripCount, 1), 32));
  }
  auto [outer, inner] =
      scf::tileParallelLoop(loop, {tileSize}, /*noMinMaxBounds=*/true);
  setMapping(outer, {gpu::Processor::BlockX});
  setMapping(inner, {gpu::Processor::ThreadX});
  runNestedLoopsSequentially(inner);
}

/// Whether `op` (or an op nested in it) reads or writes a buffer. Such code
/// must run in a kernel: every buffer is in device memory by now.
static bool accessesBuffers(Operation *op) {
  WalkResult result = op->walk([](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::advance();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &instance : instances)
      if (isa<MemoryEffects::Read, MemoryEffects::Write>(
              instance.getEffect()) &&
          instance.getValue() && isa<MemRefType>(instance.getValue().getType()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// The bytes a buffer covers: an allocation and a byte range in it.
struct ByteRange {
  Value allocation;
  int64_t begin, end; // [begin, end)
};

/// The bytes `buffer` covers, if they are known: allocations, views of them
/// at a constant byte shift (the static arena's buffers) and reshapes.
static std::optional<ByteRange> getByteRange(Value buffer) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrIndexOrFloat() ||
      type.getElementType().isIndex())
    return std::nullopt;
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  Operation *definingOp = buffer.getDefiningOp();
  if (isa_and_nonnull<memref::AllocOp, gpu::AllocOp>(definingOp))
    return ByteRange{buffer, 0, bytes};
  if (auto view = dyn_cast_or_null<memref::ViewOp>(definingOp)) {
    std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
    std::optional<ByteRange> source = getByteRange(view.getSource());
    if (!shift || !source)
      return std::nullopt;
    int64_t begin = source->begin + *shift;
    return ByteRange{source->allocation, begin, begin + bytes};
  }
  // An identity-layout reshape covers exactly its source's bytes.
  if (isa_and_nonnull<memref::CollapseShapeOp, memref::ExpandShapeOp>(
          definingOp))
    return getByteRange(definingOp->getOperand(0));
  return std::nullopt;
}

/// Whether `a` and `b` provably share no byte.
static bool areDisjoint(Value a, Value b) {
  std::optional<ByteRange> rangeA = getByteRange(a);
  std::optional<ByteRange> rangeB = getByteRange(b);
  if (!rangeA || !rangeB)
    return false;
  if (rangeA->allocation != rangeB->allocation)
    return true;
  return rangeA->end <= rangeB->begin || rangeB->end <= rangeA->begin;
}

/// Turns a serial accumulation loop, `for i: B[f(i)] += g(i)` (what a
/// ScatterElements with reduction "add" becomes), into a parallel loop of
/// atomic adds. Its iterations then commute: each one reads only buffers
/// that no iteration writes, and its one store adds to the element its own
/// load read, nothing in between. Only the order of the additions changes
/// (floating-point rounding, which a serial loop over hundreds of thousands
/// of elements in one GPU thread would not be worth). Returns null when
/// `loop` is not such a loop.
static scf::ParallelOp parallelizeAccumulation(scf::ForOp loop) {
  if (loop.getNumResults() != 0 || !loop.getInductionVar().getType().isIndex())
    return nullptr;
  Block *body = loop.getBody();
  memref::StoreOp store;
  SmallVector<memref::LoadOp> loads;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() != 0)
      return nullptr;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      loads.push_back(load);
    } else if (auto nextStore = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return nullptr;
      store = nextStore;
    } else if (!isMemoryEffectFree(&op)) {
      return nullptr;
    }
  }
  if (!store)
    return nullptr;
  // The store must write `load + addend` back where `load` read.
  Operation *add = store.getValueToStore().getDefiningOp();
  if (!isa_and_nonnull<arith::AddFOp, arith::AddIOp>(add) || !add->hasOneUse())
    return nullptr;
  memref::LoadOp accumulator;
  Value addend;
  for (unsigned operand = 0; operand < 2 && !accumulator; ++operand) {
    auto load = add->getOperand(operand).getDefiningOp<memref::LoadOp>();
    if (load && load->getBlock() == body && load->hasOneUse() &&
        load.getMemRef() == store.getMemRef() &&
        load.getIndices() == store.getIndices()) {
      accumulator = load;
      addend = add->getOperand(1 - operand);
    }
  }
  if (!accumulator)
    return nullptr;
  for (memref::LoadOp load : loads)
    if (load != accumulator &&
        !areDisjoint(load.getMemRef(), store.getMemRef()))
      return nullptr;

  OpBuilder builder(loop);
  Location loc = loop.getLoc();
  auto parallel = scf::ParallelOp::create(
      builder, loc, ValueRange{loop.getLowerBound()},
      ValueRange{loop.getUpperBound()}, ValueRange{loop.getStep()});
  loop.getInductionVar().replaceAllUsesWith(parallel.getInductionVars()[0]);
  Operation *terminator = parallel.getBody()->getTerminator();
  for (Operation &op : llvm::make_early_inc_range(body->without_terminator()))
    op.moveBefore(terminator);
  builder.setInsertionPoint(store);
  arith::AtomicRMWKind kind = isa<arith::AddFOp>(add)
                                  ? arith::AtomicRMWKind::addf
                                  : arith::AtomicRMWKind::addi;
  memref::AtomicRMWOp::create(builder, store.getLoc(), kind, addend,
                              store.getMemRef(), store.getIndices());
  store.erase();
  add->erase();
  accumulator.erase();
  loop.erase();
  return parallel;
}

/// Whether `op` uses a result of an op in `run`.
static bool usesResultOf(Operation *op, ArrayRef<Operation *> run) {
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    Operation *definingOp = operand.getDefiningOp();
    return definingOp && llvm::is_contained(run, definingOp);
  });
}

/// Moves a run of serial ops into a one-iteration parallel loop mapped to
/// one block of one thread, placed after the run's last op. Host ops between
/// the members of the run stay where they are: they use nothing the run
/// computes (or they would be members), so moving the members after them
/// keeps every definition before its uses.
static LogicalResult wrapInSingleThreadLoop(ArrayRef<Operation *> run) {
  for (Operation *op : run)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!llvm::any_of(run, [&](Operation *member) {
              return member->isAncestor(user);
            }))
          return op->emitError("host code uses a value read from device "
                               "memory; it cannot run in a GPU kernel");
  OpBuilder builder(run.back()->getContext());
  builder.setInsertionPointAfter(run.back());
  Location loc = run.front()->getLoc();
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                      ValueRange{one}, ValueRange{one});
  Operation *terminator = loop.getBody()->getTerminator();
  for (Operation *op : run)
    op->moveBefore(terminator);
  setMapping(loop, {gpu::Processor::BlockX});
  runNestedLoopsSequentially(loop);
  return success();
}

namespace {
struct GPUMapParallelLoopsPass
    : public vram::impl::GPUMapParallelLoopsPassBase<GPUMapParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (blockSize <= 0 || blockSize > 1024) {
      getOperation().emitError()
          << "block-size must be in [1, 1024] (CUDA's limit), got "
          << blockSize.getValue();
      return signalPassFailure();
    }
    for (Block &block : getOperation().getBody())
      if (failed(mapBlock(block)))
        return signalPassFailure();
  }

  /// Maps the host-level ops of `block`: parallel loops become kernels of
  /// many threads, runs of serial memory code kernels of one thread. A run
  /// is every op that reads or writes a buffer plus every op computing on
  /// what those read: a rank-0 linalg op becomes `load; arith; store` with
  /// no loop around it, and all three must run on the device. Pure host ops
  /// that use nothing the run computes (index arithmetic, views) do not end
  /// a run; anything else does (GPU ops, allocations, terminators), so
  /// kernels and copies keep their order.
  LogicalResult mapBlock(Block &block) {
    SmallVector<Operation *> serialRun;
    auto flushRun = [&]() -> LogicalResult {
      if (serialRun.empty())
        return success();
      LogicalResult result = wrapInSingleThreadLoop(serialRun);
      serialRun.clear();
      return result;
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto serialLoop = dyn_cast<scf::ForOp>(op)) {
        if (scf::ParallelOp loop = parallelizeAccumulation(serialLoop)) {
          if (failed(flushRun()))
            return failure();
          mapParallelLoop(loop, blockSize);
          continue;
        }
      }
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flushRun()))
          return failure();
        mapParallelLoop(loop, blockSize);
        continue;
      }
      bool hostOnly = isa<gpu::GPUDialect>(op.getDialect()) ||
                      op.hasTrait<OpTrait::IsTerminator>();
      if (!hostOnly && (accessesBuffers(&op) || usesResultOf(&op, serialRun))) {
        serialRun.push_back(&op);
        continue;
      }
      if (!hostOnly && !serialRun.empty() && isMemoryEffectFree(&op))
        continue;
      if (failed(flushRun()))
        return failure();
    }
    return flushRun();
  }
};
} // namespace
