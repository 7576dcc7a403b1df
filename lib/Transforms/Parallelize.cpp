//===- Parallelize.cpp - vram-parallelize, vram-tensor-parallel -----------===//

#include "vram/Parallel/Parallelize.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace vram {
#define GEN_PASS_DEF_PARALLELIZEPASS
#define GEN_PASS_DEF_TENSORPARALLELPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
/// @main, or an error naming the pass that needs it.
func::FuncOp getMain(ModuleOp module, StringRef pass) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal()) {
    module.emitError() << pass << " needs a func.func @main with a body";
    return nullptr;
  }
  return main;
}

struct TensorParallelPass
    : public vram::impl::TensorParallelPassBase<TensorParallelPass> {
  using TensorParallelPassBase::TensorParallelPassBase;

  void runOnOperation() override {
    func::FuncOp main = getMain(getOperation(), "vram-tensor-parallel");
    if (!main || failed(vram::parallelizeTensors(main, tensorParallel)))
      return signalPassFailure();
  }
};

struct ParallelizePass
    : public vram::impl::ParallelizePassBase<ParallelizePass> {
  using ParallelizePassBase::ParallelizePassBase;

  void runOnOperation() override {
    func::FuncOp main =
        getMain(getOperation(), "vram-parallelize (after vram-train)");
    if (!main)
      return signalPassFailure();
    vram::ParallelOptions options;
    options.dataParallel = dataParallel;
    options.zeroStage = zeroStage;
    if (failed(vram::parallelizeDataParallel(main, options)))
      return signalPassFailure();
  }
};
} // namespace

/// Adds `pass` configured with `options`; errors name `flag`.
static LogicalResult
addConfiguredPass(OpPassManager &pm, std::unique_ptr<Pass> pass, StringRef flag,
                  StringRef options,
                  llvm::function_ref<void(const llvm::Twine &)> report) {
  if (failed(pass->initializeOptions(options, [&](const llvm::Twine &msg) {
        report("--" + flag + ": " + msg);
        return failure();
      })))
    return failure();
  pm.addPass(std::move(pass));
  return success();
}

LogicalResult vram::addTrainingStepPasses(
    OpPassManager &pm, StringRef trainOptions,
    std::optional<StringRef> parallelOptions,
    llvm::function_ref<void(const llvm::Twine &)> report) {
  // --parallel's options by the pass they configure.
  std::string tensorOptions, dataOptions;
  SmallVector<StringRef> words;
  if (parallelOptions)
    parallelOptions->split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef word : words)
    (word.starts_with("tp=") ? tensorOptions : dataOptions)
        .append((word + " ").str());
  if (!tensorOptions.empty() &&
      failed(addConfiguredPass(pm, vram::createTensorParallelPass(), "parallel",
                               tensorOptions, report)))
    return failure();
  if (failed(addConfiguredPass(pm, vram::createTrainPass(), "train",
                               trainOptions, report)))
    return failure();
  if (!dataOptions.empty() &&
      failed(addConfiguredPass(pm, vram::createParallelizePass(), "parallel",
                               dataOptions, report)))
    return failure();
  return success();
}
