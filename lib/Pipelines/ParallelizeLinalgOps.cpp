//===- ParallelizeLinalgOps.cpp - vram-parallelize-linalg-ops -------------===//
//
// The large loop nests of the CPU path split among threads: an OpenMP
// work-sharing loop over their leading parallel loops (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

namespace vram {
#define GEN_PASS_DEF_PARALLELIZELINALGOPSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct ParallelizeLinalgOpsPass
    : public vram::impl::ParallelizeLinalgOpsPassBase<
          ParallelizeLinalgOpsPass> {
  using ParallelizeLinalgOpsPassBase::ParallelizeLinalgOpsPassBase;
  void runOnOperation() override;

  /// How many leading loops of `op` to split into chunks of one step each:
  /// the fewest parallel ones whose extents multiply to `minChunks` or more,
  /// never the innermost; 0 when the op stays serial.
  unsigned getSplitLoops(linalg::LinalgOp op) const;
};
} // namespace

/// Whether `expr` grows with every loop index it reads: sums of indices
/// times positive constants, plus constants (a pooling window's
/// `oh * 2 + kh`). Tiling takes a chunk's slice of an operand to run from
/// the index expression at the chunk's first iteration to the one at its
/// last, which a decreasing index (a flipped filter's `2 - kh`) breaks.
static bool isIncreasing(AffineExpr expr) {
  if (isa<AffineDimExpr, AffineConstantExpr>(expr))
    return true;
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (binary.getKind() == AffineExprKind::Add)
    return isIncreasing(binary.getLHS()) && isIncreasing(binary.getRHS());
  auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS());
  return binary.getKind() == AffineExprKind::Mul && factor &&
         factor.getValue() > 0 && isIncreasing(binary.getLHS());
}

unsigned ParallelizeLinalgOpsPass::getSplitLoops(linalg::LinalgOp op) const {
  if (!op.hasPureBufferSemantics() || op.hasDynamicShape() ||
      op.getNumLoops() < 2)
    return 0;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!llvm::all_of(map.getResults(), isIncreasing))
      return 0;
  // Products saturate: a huge static shape must not overflow them.
  SmallVector<int64_t> extents = op.getStaticLoopRanges();
  uint64_t iterations = 1;
  for (int64_t extent : extents)
    iterations = llvm::SaturatingMultiply(iterations, uint64_t(extent));
  if (iterations < uint64_t(minIterations))
    return 0;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  uint64_t chunks = 1;
  for (unsigned loop = 0; loop + 1 < extents.size(); ++loop) {
    if (iterators[loop] != utils::IteratorType::parallel)
      return 0;
    chunks = llvm::SaturatingMultiply(chunks, uint64_t(extents[loop]));
    if (chunks >= uint64_t(minChunks))
      return loop + 1;
  }
  return 0;
}

/// Replaces `forall` (no results) by an OpenMP parallel region holding one
/// work-sharing loop nest over the same iterations, collapsed into one
/// range of iterations that the threads share out statically. Built here
/// rather than through scf.parallel and convert-scf-to-openmp, which puts
/// each iteration in a memref.alloca_scope that must stay one block, and
/// the loops inside it are lowered to blocks before the scope is.
static void shareOut(RewriterBase &rewriter, scf::ForallOp forall) {
  Location loc = forall.getLoc();
  rewriter.setInsertionPoint(forall);
  auto materialize = [&](ArrayRef<OpFoldResult> values) {
    SmallVector<Value> result;
    for (OpFoldResult value : values)
      result.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, value));
    return result;
  };
  omp::LoopNestOperands bounds;
  unsigned loops = forall.getRank();
  bounds.collapseNumLoops = rewriter.getI64IntegerAttr(loops);
  bounds.loopLowerBounds = materialize(forall.getMixedLowerBound());
  bounds.loopUpperBounds = materialize(forall.getMixedUpperBound());
  bounds.loopSteps = materialize(forall.getMixedStep());
  auto parallel =
      omp::ParallelOp::create(rewriter, loc, omp::ParallelOperands{});
  rewriter.createBlock(&parallel.getRegion());
  auto wsloop = omp::WsloopOp::create(rewriter, loc, omp::WsloopOperands{});
  omp::TerminatorOp::create(rewriter, loc);
  rewriter.createBlock(&wsloop.getRegion());
  auto nest = omp::LoopNestOp::create(rewriter, loc, bounds);
  Block *body = rewriter.createBlock(
      &nest.getRegion(), {}, SmallVector<Type>(loops, rewriter.getIndexType()),
      SmallVector<Location>(loops, loc));
  rewriter.eraseOp(forall.getTerminator());
  rewriter.inlineBlockBefore(forall.getBody(), body, body->end(),
                             body->getArguments());
  rewriter.setInsertionPointToEnd(body);
  omp::YieldOp::create(rewriter, loc);
  rewriter.eraseOp(forall);
}

void ParallelizeLinalgOpsPass::runOnOperation() {
  if (minIterations < 0 || minChunks < 1) {
    getOperation()->emitError("vram-parallelize-linalg-ops: min-iterations ")
        << int64_t(minIterations) << " and min-chunks " << int64_t(minChunks)
        << ": expected min-iterations >= 0 and min-chunks >= 1";
    return signalPassFailure();
  }
  SmallVector<std::pair<linalg::LinalgOp, unsigned>> splits;
  getOperation()->walk([&](linalg::LinalgOp op) {
    if (unsigned loops = getSplitLoops(op))
      splits.push_back({op, loops});
  });

  IRRewriter rewriter(&getContext());
  for (auto [op, loops] : splits) {
    SmallVector<int64_t> tileSizes(op.getNumLoops(), 0);
    std::fill_n(tileSizes.begin(), loops, 1);
    scf::SCFTilingOptions options;
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    options.setTileSizes(
        getAsIndexOpFoldResult(rewriter.getContext(), tileSizes));
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
        rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled)) {
      op->emitError("could not split the loop nest among threads");
      return signalPassFailure();
    }
    rewriter.eraseOp(op);
    shareOut(rewriter, cast<scf::ForallOp>(tiled->loops.front()));
  }
}
