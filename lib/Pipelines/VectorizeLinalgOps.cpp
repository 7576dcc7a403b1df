//===- VectorizeLinalgOps.cpp - vram-vectorize-linalg-ops -----------------===//
//
// The loop nests left on the CPU path (elementwise chains, broadcasts,
// fills, copies) as vector code along their innermost dimension (see
// Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace vram {
#define GEN_PASS_DEF_VECTORIZELINALGOPSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct VectorizeLinalgOpsPass
    : public vram::impl::VectorizeLinalgOpsPassBase<VectorizeLinalgOpsPass> {
  using VectorizeLinalgOpsPassBase::VectorizeLinalgOpsPassBase;
  void runOnOperation() override;
};
} // namespace

/// Whether `value`'s innermost dimension has unit stride (a scalar too).
static bool hasUnitInnerStride(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return !type || type.isLastDimUnitStride();
}

/// Whether vectors of `type` are laid out in memory as its memrefs are: a
/// whole number of bytes per element (LLVM packs vectors of i1 and i4 as
/// bits, memrefs give each element a byte).
static bool isByteSized(Type type) {
  return (isa<IntegerType>(type) || isa<FloatType>(type)) &&
         type.getIntOrFloatBitWidth() % 8 == 0;
}

/// Whether `op` is a loop nest this pass vectorizes: on buffers of static
/// shape and elements of whole bytes, every loop parallel (no reduction),
/// the innermost one reading and writing with unit stride every operand it
/// indexes (others are broadcast along it), and its body something the
/// vectorizer takes whole.
static bool isVectorizable(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.hasDynamicShape() ||
      op.getNumLoops() == 0 || isa<linalg::ConvolutionOpInterface>(*op) ||
      isa<linalg::ContractionOpInterface>(*op))
    return false;
  if (op.getNumLoops() != op.getNumParallelLoops())
    return false;
  unsigned inner = op.getNumLoops() - 1;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isByteSized(getElementTypeOrSelf(operand.get().getType())))
      return false;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isProjectedPermutation())
      return false;
    bool indexedByInner = map.isFunctionOfDim(inner);
    if (!indexedByInner)
      continue;
    // The inner loop must index the operand's innermost dimension.
    if (map.getNumResults() == 0 ||
        map.getResults().back() != getAffineDimExpr(inner, op.getContext()) ||
        !hasUnitInnerStride(operand.get()))
      return false;
  }
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

/// Tiles `op` to one step along every loop but the innermost, and along
/// that to rows of `width` elements (which divides its extent), and
/// vectorizes each tile: all of static shape, so no masks.
static void vectorizeInRows(RewriterBase &rewriter, TilingInterface op,
                            int64_t width) {
  auto linalgOp = cast<linalg::LinalgOp>(op.getOperation());
  SmallVector<int64_t> tileSizes(linalgOp.getNumLoops(), 1);
  tileSizes.back() = width;
  scf::SCFTilingOptions options;
  options.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), tileSizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled =
      scf::tileUsingSCF(rewriter, op, options);
  if (failed(tiled))
    return;
  rewriter.eraseOp(op);
  for (Operation *tile : tiled->tiledOps) {
    rewriter.setInsertionPoint(tile);
    if (succeeded(linalg::vectorize(rewriter, tile)))
      rewriter.eraseOp(tile);
  }
}

void VectorizeLinalgOpsPass::runOnOperation() {
  SmallVector<linalg::LinalgOp> candidates;
  getOperation()->walk([&](linalg::LinalgOp op) {
    if (isVectorizable(op))
      candidates.push_back(op);
  });

  // A row of up to four vectors is one (LLVM splits it into registers);
  // a longer one is cut into vectors, and the rest that no vector fills
  // is split off as an op of its own, one shorter vector per row.
  IRRewriter rewriter(&getContext());
  SetVector<Operation *> functions;
  for (linalg::LinalgOp op : candidates) {
    functions.insert(op->getParentWithTrait<OpTrait::IsIsolatedFromAbove>());
    unsigned inner = op.getNumLoops() - 1;
    int64_t extent = op.getStaticLoopRanges()[inner];
    auto tileable = cast<TilingInterface>(op.getOperation());
    if (extent <= 4 * vectorWidth) {
      vectorizeInRows(rewriter, tileable, extent);
      continue;
    }
    int64_t whole = extent / vectorWidth * vectorWidth;
    if (whole == extent) {
      vectorizeInRows(rewriter, tileable, vectorWidth);
      continue;
    }
    rewriter.setInsertionPoint(op);
    auto [head, rest] = linalg::splitOp(rewriter, tileable, inner,
                                        rewriter.getIndexAttr(whole));
    vectorizeInRows(rewriter, head, vectorWidth);
    vectorizeInRows(rewriter, rest, extent - whole);
  }

  // Down to 1-d loads and stores, broadcasts and arithmetic on vectors,
  // and the math functions as polynomials, which stay vectors where libm
  // calls would not; in the functions holding vector code only (after
  // vram-outline-linalg-ops, one loop nest each).
  RewritePatternSet patterns(&getContext());
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorTransferDropUnitDimsPatterns(patterns);
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
  vector::populateVectorTransferLoweringPatterns(patterns,
                                                 /*maxTransferRank=*/1);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  // A broadcast operand comes out as a broadcast to the row's shape with a
  // unit dimension moved by a transpose; folded, it is one splat.
  vector::BroadcastOp::getCanonicalizationPatterns(patterns, &getContext());
  vector::TransposeOp::getCanonicalizationPatterns(patterns, &getContext());
  vector::ExtractOp::getCanonicalizationPatterns(patterns, &getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (Operation *function : functions)
    if (failed(applyPatternsGreedily(function, frozen))) {
      function->emitError("vector code did not reach a fixed point");
      return signalPassFailure();
    }
}
