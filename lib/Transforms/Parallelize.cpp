//===- Parallelize.cpp - the passes of one rank's program -----------------===//

#include "vram/Parallel/Parallelize.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace vram {
#define GEN_PASS_DEF_PARALLELIZEPASS
#define GEN_PASS_DEF_TENSORPARALLELPASS
#define GEN_PASS_DEF_PIPELINESTAGEPASS
#define GEN_PASS_DEF_PIPELINESCHEDULEPASS
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
    if (!main || failed(vram::parallelizeTensors(main, tensorParallel)) ||
        (sequenceParallel &&
         failed(vram::parallelizeSequence(main, tensorParallel))))
      return signalPassFailure();
  }
};

struct PipelineStagePass
    : public vram::impl::PipelineStagePassBase<PipelineStagePass> {
  using PipelineStagePassBase::PipelineStagePassBase;

  void runOnOperation() override {
    func::FuncOp main = getMain(getOperation(), "vram-pipeline-stage");
    vram::PipelineOptions options;
    options.stages = stages;
    options.stage = stage;
    options.microbatches = microbatches;
    if (!main || failed(vram::splitPipelineStage(main, options)))
      return signalPassFailure();
  }
};

struct PipelineSchedulePass
    : public vram::impl::PipelineSchedulePassBase<PipelineSchedulePass> {
  void runOnOperation() override {
    func::FuncOp main =
        getMain(getOperation(), "vram-pipeline-schedule (after vram-train)");
    if (!main || failed(vram::schedulePipeline(main)))
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
  std::string tensorOptions, pipelineOptions, dataOptions;
  SmallVector<StringRef> words;
  if (parallelOptions)
    parallelOptions->split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef word : words) {
    std::string &options =
        word.starts_with("tp=") || word.starts_with("sp=") ? tensorOptions
        : word.starts_with("pp=") || word.starts_with("stage=") ||
                word.starts_with("microbatches=")
            ? pipelineOptions
            : dataOptions;
    options.append((word + " ").str());
  }
  if (!tensorOptions.empty() &&
      failed(addConfiguredPass(pm, vram::createTensorParallelPass(), "parallel",
                               tensorOptions, report)))
    return failure();
  if (!pipelineOptions.empty() &&
      failed(addConfiguredPass(pm, vram::createPipelineStagePass(), "parallel",
                               pipelineOptions, report)))
    return failure();
  if (failed(addConfiguredPass(pm, vram::createTrainPass(), "train",
                               trainOptions, report)))
    return failure();
  if (!pipelineOptions.empty())
    pm.addPass(vram::createPipelineSchedulePass());
  if (!dataOptions.empty() &&
      failed(addConfiguredPass(pm, vram::createParallelizePass(), "parallel",
                               dataOptions, report)))
    return failure();
  return success();
}
