//===- Parallelize.cpp - the vram-parallelize pass ------------------------===//

#include "vram/Parallel/Parallelize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace vram {
#define GEN_PASS_DEF_PARALLELIZEPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct ParallelizePass
    : public vram::impl::ParallelizePassBase<ParallelizePass> {
  using ParallelizePassBase::ParallelizePassBase;

  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      getOperation().emitError("vram-parallelize needs a func.func @main with "
                               "a body (vram-train's step)");
      return signalPassFailure();
    }
    vram::ParallelOptions options;
    options.dataParallel = dataParallel;
    options.zeroStage = zeroStage;
    if (failed(vram::parallelizeDataParallel(main, options)))
      return signalPassFailure();
  }
};
} // namespace
