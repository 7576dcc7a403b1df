//===- VramDialect.td - the vram dialect: memory plans in IR -*- tablegen -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMDIALECT_TD
#define VRAM_DIALECT_VRAM_VRAMDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Vram_Dialect : Dialect {
  let name = "vram";
  let summary = "Memory plans as IR: host copies of tensors, recomputation "
                "and in-place optimizer updates";
  let description = [{
    What `--vram-plan` adds to a program so that it fits a memory budget. The
    order of ops in a block is the schedule; the plan is expressed with:

    - `!vram.host<tensor<...>>`: a tensor in pinned host memory. It occupies
      no device memory, so the memory analysis counts it as 0 bytes.
    - `vram.offload`: copies a device tensor to host memory; after it, the
      device tensor may die.
    - `vram.prefetch`: copies a host tensor back into a fresh device tensor.
    - `vram.update` and `vram.increment`: a training step's optimizer
      update of a parameter and its state (and the step counter), in the
      buffers they came in.
    - the unit attribute `vram.recompute` on a clone of a side-effect-free op,
      placed right before the later use it serves (see docs/planning.md for
      why a clone and not a region op).

    The dialect also owns the discardable attributes `vram.budget` and
    `vram.planned_peak` (integers, bytes) that `--vram-plan` puts on the
    function it planned, and `vram.lowered_peak` (with the unit attribute
    `vram.no_library_workspace` where the program fits only if its
    convolutions give cuDNN no workspace) that `--vram-fit-plan-to-arena`
    adds; and the ones the memory analysis reads:
    `vram.param` on function arguments (`#vram.param<trainable>`, ...),
    `vram.phase` (`#vram.phase<backward>`) and `vram.category`
    (`#vram.category<gradient>`) on ops. Any other `vram.*` attribute, or
    one of these with a value of the wrong kind, is a verifier error.
  }];
  let cppNamespace = "::vram";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Marks an op that repeats an earlier computation to save memory.
    static constexpr llvm::StringLiteral kRecomputeAttrName = "vram.recompute";
    /// The budget (bytes) a function was planned for.
    static constexpr llvm::StringLiteral kBudgetAttrName = "vram.budget";
    /// The peak (bytes) the planner's simulation predicts for a function.
    static constexpr llvm::StringLiteral kPlannedPeakAttrName =
        "vram.planned_peak";
    /// The device bytes (arena, escaping buffers, arguments) of the planned
    /// function once lowered, as vram-fit-plan-to-arena measured them.
    static constexpr llvm::StringLiteral kLoweredPeakAttrName =
        "vram.lowered_peak";
    /// Set by vram-fit-plan-to-arena on a planned function whose lowered
    /// program meets its budget only if its library calls get no
    /// workspace: vram-call-library-kernels then gives cuDNN none (implicit
    /// GEMM) instead of a convolution's column matrix.
    static constexpr llvm::StringLiteral kNoLibraryWorkspaceAttrName =
        "vram.no_library_workspace";
    /// What the plan did (a dictionary: unplanned_peak, recomputations,
    /// offloaded_bytes, host_arguments, host_argument_bytes, compute_seconds,
    /// recompute_seconds, exposed_copy_seconds, device), for reports.
    static constexpr llvm::StringLiteral kPlanAttrName = "vram.plan";
    /// Left by vram-plan on a function whose budget no plan meets, next to
    /// its error, for drivers that plan again (vram-fit-plan-to-arena): a
    /// dictionary of the error's numbers (budget, smallest_budget, floor)
    /// and floor_parts, what makes the floor up.
    static constexpr llvm::StringLiteral kUnmetBudgetAttrName =
        "vram.unmet_budget";
    /// Set by vram-drop-argument-results on a function whose results it
    /// dropped: per original result, the argument holding it, or -1.
    static constexpr llvm::StringLiteral kResultsInArgumentsAttrName =
        "vram.results_in_arguments";
    /// ParamKindAttr of a function argument.
    static constexpr llvm::StringLiteral kParamAttrName = "vram.param";
    /// On an argument of a per-rank program (vram-parallelize): the tensor
    /// type whose flattened layout, padded to a multiple of the ranks, the
    /// argument holds: all of it (a replicated parameter whose size the
    /// ranks do not divide) or this rank's slice of it.
    static constexpr llvm::StringLiteral kFlatOfAttrName = "vram.flat_of";
    /// On a parameter of a tensor-parallel program (vram-tensor-parallel):
    /// which part of the whole parameter this rank holds, a dictionary
    /// {type = <the whole tensor's type>, axis = <the split axis>,
    /// parts = array<i64: ...>}: along `axis` the whole tensor is the
    /// concatenation of `parts`, and the rank holds its chunk (one of as many
    /// equal chunks as the grid's tensor axis has ranks) of each part.
    static constexpr llvm::StringLiteral kTensorSliceOfAttrName =
        "vram.tensor_slice_of";
    /// The device grid (`shard.grid`) of a per-rank program, row-major, and
    /// its axes: over the data-parallel ranks, over the ranks a tensor-
    /// parallel layer is split among, and over the pipeline's stages.
    static constexpr llvm::StringLiteral kRankGridName = "ranks";
    static constexpr int16_t kDataAxis = 0;
    static constexpr int16_t kTensorAxis = 1;
    static constexpr int16_t kPipelineAxis = 2;
    /// On the function of one pipeline stage (vram-pipeline-stage): a
    /// dictionary {stage, stages, microbatches} of i64.
    static constexpr llvm::StringLiteral kPipelineStageAttrName =
        "vram.pipeline_stage";
    /// On an argument of a pipeline stage: the neighbouring stage it is
    /// received from, "previous" (an activation) or "next" (the gradient
    /// of this stage's output).
    static constexpr llvm::StringLiteral kPipelineRecvAttrName =
        "vram.pipeline_recv";
    /// On a parameter of a pipeline stage that other stages hold too (an
    /// embedding tied to the LM head): those stages, an array of i64; the
    /// stages add up their gradients of it.
    static constexpr llvm::StringLiteral kPipelineSharedAttrName =
        "vram.pipeline_shared";
    /// On a result of a pipeline stage: the neighbouring stage it is sent
    /// to, "next" (the stage's output) or "previous" (the gradient of the
    /// received activation).
    static constexpr llvm::StringLiteral kPipelineSendAttrName =
        "vram.pipeline_send";
    /// On a shard.all_gather of sequence parallelism whose readers run
    /// replicated (the head after the last layer): the gradient reaching it
    /// is the same on every rank, so its input's gradient is the rank's
    /// part of it, without a reduction (Megatron-LM's gather with
    /// tensor_parallel_output_grad=False).
    static constexpr llvm::StringLiteral kReplicatedReadersAttrName =
        "vram.replicated_readers";
    /// PhaseAttr of a training step's backward and optimizer ops.
    static constexpr llvm::StringLiteral kPhaseAttrName = "vram.phase";
    /// MemoryCategoryAttr of an op: the category of its results.
    static constexpr llvm::StringLiteral kCategoryAttrName = "vram.category";
  }];
}

def Vram_HostTensorType : TypeDef<Vram_Dialect, "HostTensor"> {
  let mnemonic = "host";
  let summary = "a tensor held in pinned host memory";
  let description = [{
    `!vram.host<tensor<4x8xf32>>` is the host copy of a statically shaped
    device tensor. It is not a shaped type on purpose: analyses that size
    device memory see it as 0 bytes.
  }];
  let parameters = (ins "::mlir::RankedTensorType":$tensorType);
  let assemblyFormat = "`<` $tensorType `>`";
  let genVerifyDecl = 1;
}

#endif // VRAM_DIALECT_VRAM_VRAMDIALECT_TD
