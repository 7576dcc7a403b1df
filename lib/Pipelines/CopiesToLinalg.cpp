//===- CopiesToLinalg.cpp - vram-copies-to-linalg -------------------------===//
//
// Strided buffer copies as linalg.copy loop nests (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace vram {
#define GEN_PASS_DEF_COPIESTOLINALGPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct CopiesToLinalgPass
    : public vram::impl::CopiesToLinalgPassBase<CopiesToLinalgPass> {
  void runOnOperation() override;
};
} // namespace

/// Whether the copy's lowering calls memrefCopy: a statically shaped copy
/// where either side is not one contiguous block, by the test the LLVM
/// lowering applies (memcpy otherwise).
static bool needsLoops(memref::CopyOp copy) {
  auto source = cast<MemRefType>(copy.getSource().getType());
  auto target = cast<MemRefType>(copy.getTarget().getType());
  return source.hasStaticShape() &&
         (!memref::isStaticShapeAndContiguousRowMajor(source) ||
          !memref::isStaticShapeAndContiguousRowMajor(target));
}

void CopiesToLinalgPass::runOnOperation() {
  SmallVector<memref::CopyOp> copies;
  getOperation()->walk([&](memref::CopyOp copy) {
    if (needsLoops(copy))
      copies.push_back(copy);
  });
  IRRewriter rewriter(&getContext());
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
  }
}
