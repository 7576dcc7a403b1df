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
    mapping.push_back(gpu::ParallelLoopDimMappingAttr::get(
        context, processor, identity, identity));
  // The mapping is built valid (one processor per dimension, no processor
  // twice but Sequential), so this cannot fail.
  (void)gpu::setMappingAttr(loop, mapping);
}

/// Runs every parallel loop nested in `root` sequentially inside the thread
/// that executes `root`.
static void runNestedLoopsSequentially(Operation *root) {
  root->walk([&](scf::ParallelOp nested) {
    if (nested == root)
      return;
    setMapping(nested, SmallVector<gpu::Processor>(nested.getNumLoops(),
                                                   gpu::Processor::Sequential));
  });
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
    tileSize = std::min<int64_t>(blockSize, llvm::alignTo(std::max<int64_t>(tripCount, 1),
                                                 32));
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

/// Moves a run of consecutive serial ops into a one-iteration parallel loop
/// mapped to one block of one thread.
static LogicalResult wrapInSingleThreadLoop(ArrayRef<Operation *> run) {
  Operation *first = run.front();
  for (Operation *op : run)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!llvm::any_of(run, [&](Operation *member) {
              return member->isAncestor(user);
            }))
          return op->emitError("host code uses a value read from device "
                               "memory; it cannot run in a GPU kernel");
  OpBuilder builder(first);
  Location loc = first->getLoc();
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
  /// many threads, runs of serial memory code kernels of one thread.
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
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (failed(flushRun()))
          return failure();
        mapParallelLoop(loop, blockSize);
        continue;
      }
      if (!isa<gpu::GPUDialect>(op.getDialect()) && accessesBuffers(&op)) {
        serialRun.push_back(&op);
        continue;
      }
      if (failed(flushRun()))
        return failure();
    }
    return flushRun();
  }
};
} // namespace
