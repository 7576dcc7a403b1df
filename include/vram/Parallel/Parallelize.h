//===- Parallelize.h - one rank's program of a parallel training step -*- C++
//-*-===//
//
// A training step run on many GPUs is, on each of them, another program: it
// holds its share of the model states and exchanges the rest through
// collectives. These functions rewrite vram-train's step into that per-rank
// program, with the collectives as `shard` dialect ops on a device grid, so
// the memory analysis, the reports and the planner see one rank's memory.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PARALLEL_PARALLELIZE_H
#define VRAM_PARALLEL_PARALLELIZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace vram {

struct ParallelOptions {
  /// Data-parallel ranks: each runs the step on its own micro-batch (the
  /// step's batch) and the gradients are averaged across them.
  int64_t dataParallel = 1;
  /// ZeRO stage over the data-parallel ranks: 0 replicates everything (DDP);
  /// 1 shards the optimizer state, 2 also the gradients, 3 also the
  /// parameters (FSDP's full sharding).
  int64_t zeroStage = 0;
  /// Tensor-parallel ranks: each holds its part of the split linear layers
  /// (parallelizeTensors).
  int64_t tensorParallel = 1;
};

/// Rewrites the forward pass `func` (before vram-train) into one
/// tensor-parallel rank's, Megatron-style: each pair of linear layers with
/// the attention heads or the MLP's hidden features between them is split
/// among `ranks` ranks (the first by columns, the second by rows, an
/// all-reduce <sum> after it), the parameters become the rank's parts
/// (VramDialect::kTensorSliceOfAttrName) and the layers' replicated inputs
/// go through vram.tensor_parallel_copy. Adds or widens the grid
/// (VramDialect::kRankGridName, axis kTensorAxis). An error when no pair is
/// found.
mlir::LogicalResult parallelizeTensors(mlir::func::FuncOp func, int64_t ranks);

struct PipelineOptions {
  /// Pipeline stages the model's layers are split among.
  int64_t stages = 1;
  /// The stage this rank runs (0 holds the model's inputs, stages - 1 its
  /// prediction and loss).
  int64_t stage = 0;
  /// Micro-batches each step runs through the pipeline (the step's batch
  /// is one micro-batch); their gradients are summed before the update.
  /// 0: as many as stages.
  int64_t microbatches = 0;
};

/// Cuts the forward pass `func` (before vram-train) into `options.stages`
/// pipeline stages and keeps stage `options.stage`: the cuts are where one
/// activation crosses (between transformer layers), spread so the stages'
/// layers cost the same (the ops before the first possible cut go with stage
/// 0, those after the last with the last stage, as Megatron-LM places the
/// embedding and the head). The activation received from the previous stage
/// becomes an argument (VramDialect::kPipelineRecvAttrName), the one sent to
/// the next the result; the stage's parameters are those its ops read.
/// Values computed from the data inputs alone (masks, positions) and views
/// of parameters (a tied LM head's transpose) are computed on every stage
/// that reads them. Marks `func` with VramDialect::kPipelineStageAttrName
/// and adds the grid's pipeline axis. Errors name what does not split.
mlir::LogicalResult splitPipelineStage(mlir::func::FuncOp func,
                                       const PipelineOptions &options);

/// Rewrites vram-train's step of one pipeline stage into the stage's whole
/// step under the 1F1B schedule (Narayanan et al. 2021, PipeDream-Flush):
/// each micro-batch's forward and backward, in the order the stage runs
/// them (stage s first runs stages - 1 - s forwards, then alternates), with
/// the activations and gradients received from and sent to the neighbouring
/// stages as `shard.recv` / `shard.send` on the grid's pipeline axis, the
/// gradients summed over the micro-batches and applied, as their mean, by
/// one update. The data inputs hold every micro-batch's, stacked along a new
/// first axis. A no-op on a function without the pipeline attribute.
mlir::LogicalResult schedulePipeline(mlir::func::FuncOp func);

/// Adds sequence parallelism (Korthikanti et al. 2022) to a forward pass
/// `parallelizeTensors` split among `ranks` ranks: the token-wise ops
/// between its layer pairs (residual sums, LayerNorms, dropout) run on the
/// rank's 1/ranks of the tokens; the all-reduce after each row layer
/// becomes a reduce-scatter along the tokens, the copy before each column
/// layer an all-gather. Errors name what does not split.
mlir::LogicalResult parallelizeSequence(mlir::func::FuncOp func, int64_t ranks);

/// Rewrites the training step `func` (vram-train's output, with an
/// optimizer) into the program of one data-parallel rank: gradients
/// averaged across ranks (all-reduce, or reduce-scatter from ZeRO-2 on),
/// optimizer state, gradients and parameters sharded as the stage says,
/// parameters gathered for use (ZeRO-3) and after the update (ZeRO-1/2),
/// and the reported loss averaged. Adds the grid
/// (VramDialect::kRankGridName) to the enclosing module.
/// Errors name what the step has that the rewrite does not support.
mlir::LogicalResult parallelizeDataParallel(mlir::func::FuncOp func,
                                            const ParallelOptions &options);

} // namespace vram

#endif // VRAM_PARALLEL_PARALLELIZE_H
