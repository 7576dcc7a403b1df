//===- Passes.td - vram-opt's passes -----------------------*- tablegen -*-===//

#ifndef VRAM_TRANSFORMS_PASSES_TD
#define VRAM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintMemoryPass : Pass<"vram-print-memory", "mlir::ModuleOp"> {
  let summary = "Reports the memory every function needs: peak, categories, "
                "largest tensors, layers, timeline";
  let description = [{
    Runs the memory analysis (liveness over the schedule, aware of aliasing)
    on every function with a body and writes a report: a table for people,
    versioned JSON with the full timeline for tools, or one self-contained
    HTML page with a stacked memory-over-time plot. A module pass, so that
    reports of several functions go to one output in order. The IR is not
    changed.

    ```
    vram-opt model.mlir --vram-print-memory="format=json output=report.json"
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "table, json or html">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write the report to ('-': standard output)">,
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "memory budget, e.g. 16GB, 16GiB, 512MiB, 16e9">,
    Option<"device", "device", "std::string", /*default=*/"\"\"",
           "device profile (e.g. H100-80GB); without --budget, the budget is "
           "its capacity minus the CUDA context reserve">,
    Option<"top", "top", "unsigned", /*default=*/"10",
           "how many of the largest tensors to list">,
    Option<"layerDepth", "layer-depth", "unsigned", /*default=*/"2",
           "path components of node names that make a layer">,
  ];
  let statistics = [
    Statistic<"peakBytes", "peak-bytes", "Peak live bytes of the last function">,
  ];
}

def PrintLivenessPass : Pass<"vram-print-liveness", "mlir::ModuleOp"> {
  let summary = "Prints every buffer's live range and the live bytes at "
                "every program point (a test pass of the memory analysis)";
  let description = [{
    For each function: one line per buffer (the value that allocates it, its
    category, its bytes, the program points [first, last] it is live at,
    numbered from 1) and one line per op with the bytes live while it runs.
  }];
}

def StaticArenaPass : InterfacePass<"vram-static-arena",
                                    "mlir::FunctionOpInterface"> {
  let summary = "Places every static buffer of a function at an offset in "
                "one arena";
  let description = [{
    On bufferized IR: every `memref.alloc` of a static shape with the identity
    layout in the function's entry block becomes a `memref.view` into one
    arena allocated at function entry (one per memory space), at an offset
    chosen so that no two buffers live at the same time share a byte. Their
    `memref.dealloc`s go away; the arena is deallocated before the
    terminator. Lifetimes come from the memory analysis (views alias their
    source); a buffer starts at the first use of its alloc and ends at the
    last use of any alias. Buffers that escape stay allocs: returned or
    yielded ones, ones freed by anything but a `memref.dealloc` of the alloc,
    and ones read back as tensors.

    ```mlir
    %a = memref.alloc() : memref<64xf32>
    ...
    memref.dealloc %a : memref<64xf32>
    ```
    becomes
    ```mlir
    %arena = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
    %c256 = arith.constant 256 : index
    %a = memref.view %arena[%c256][] : memref<512xi8> to memref<64xf32>
    ...
    memref.dealloc %arena : memref<512xi8>
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "uint64_t", /*default=*/"256",
           "byte alignment of every offset and of the arena (a power of two; "
           "256 is cudaMalloc's granularity); an alloc's own larger "
           "alignment is kept">,
    Option<"searchRounds", "search-rounds", "unsigned", /*default=*/"300",
           "placements the packer's local search may try after its "
           "orderings">,
    Option<"freeArena", "free-arena", "bool", /*default=*/"true",
           "deallocate the arena before the terminator; false leaves it to a "
           "deallocation pass that runs after (ownership-based deallocation "
           "refuses IR that already frees buffers)">,
    Option<"printStats", "print-stats", "bool", /*default=*/"false",
           "emit a remark per arena: its size, the max-live lower bound, "
           "their ratio and the size without reuse">,
  ];
  let statistics = [
    Statistic<"numPlaced", "placed-buffers", "Allocs placed in an arena">,
    Statistic<"numEscaping", "escaping-buffers",
              "Static allocs kept because they escape">,
    Statistic<"arenaBytes", "arena-bytes", "Bytes of all arenas">,
    Statistic<"lowerBoundBytes", "lower-bound-bytes",
              "Sum of the arenas' max-live lower bounds">,
    Statistic<"naiveBytes", "naive-bytes",
              "Bytes the placed buffers take without reuse">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def PlanPass : Pass<"vram-plan"> {
  let summary = "Makes a function fit a memory budget: reorders ops, "
                "recomputes and offloads tensors";
  let description = [{
    Runs on every function (FunctionOpInterface) in the op it is scheduled
    on, so `--vram-plan` works on a module without a nesting pipeline.
    Builds the memory planner's graph from the function (tensors and their
    live ranges from the memory analysis, op times from the cost model on
    `device`), runs `planner` and writes the plan back as IR: ops in the
    plan's order, a clone marked `vram.recompute` right before a later use
    of a dropped tensor, `vram.offload` / `vram.prefetch` around a gap in a
    tensor's use, and every use redirected to the instance resident there.
    The function gets `vram.budget` and `vram.planned_peak` (bytes, as the
    memory analysis measures the planned IR). An impossible budget is an
    error that names the smallest budget that can be met.

    ```mlir
    // before                               // after (budget forces a recompute)
    %a = onnx.Relu(%x)                      %a = onnx.Relu(%x)
    %b = onnx.Exp(%a)                       %b = onnx.Exp(%a)
    ...                                     ...
    %g = onnx.Mul(%d, %a) {vram.phase...}   %a1 = onnx.Relu(%x) {vram.recompute}
                                            %g = onnx.Mul(%d, %a1) {vram.phase...}
    ```
  }];
  let options = [
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "memory budget, e.g. 16GB, 16GiB, 512MiB, 16e9 (default: the "
           "device's capacity minus its CUDA context reserve)">,
    Option<"device", "device", "std::string", /*default=*/"\"H100\"",
           "device profile: compute speed for op times, host link for copies">,
    Option<"planner", "planner", "std::string", /*default=*/"\"fast\"",
           "fast, fast-replay (the fast planner without its drops chosen "
           "ahead), milp (exact, recompute only, small graphs), sqrt (Chen "
           "et al. checkpoints) or none (only check the budget)">,
    Option<"allowOffload", "allow-offload", "bool", /*default=*/"true",
           "allow offloading tensors to host memory">,
    Option<"allowReorder", "allow-reorder", "bool", /*default=*/"false",
           "also try an op order chosen for memory and keep it when its plan "
           "is faster, or as fast with a lower peak">,
    Option<"maxOverhead", "max-overhead", "double", /*default=*/"-1.0",
           "largest acceptable extra time as a fraction of the unplanned "
           "compute time (0.2 = 20%); negative: no limit">,
    Option<"printPlan", "print-plan", "bool", /*default=*/"false",
           "print what happens to every tensor, and why, to stdout">,
  ];
  let statistics = [
    Statistic<"recomputedOps", "recomputed-ops", "Ops cloned for recomputation">,
    Statistic<"offloads", "offloads", "Tensors copied to host memory">,
    Statistic<"offloadedBytes", "offloaded-bytes", "Bytes copied to host memory">,
    Statistic<"overheadPermille", "overhead-permille",
              "Extra time over the unplanned compute time, in 1/1000">,
  ];
  let dependentDialects = ["vram::VramDialect"];
}

def VerifyPlanPass : Pass<"vram-verify-plan"> {
  let summary = "Checks a planned function: peak within budget, uses "
                "dominated, prefetches of offloaded values";
  let description = [{
    An independent check of what `--vram-plan` emitted: re-runs the memory
    analysis on the IR and fails at the first op where live bytes exceed the
    budget (the `budget` option, else the function's `vram.budget`); checks
    that every use is dominated by its definition and that every
    `vram.prefetch` reads the result of a `vram.offload`. The IR is not
    changed.
  }];
  let options = [
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "memory budget (default: the function's vram.budget, if any)">,
  ];
}

def TrainPass : Pass<"vram-train", "mlir::ModuleOp"> {
  let summary = "Turns the forward pass @main into one training step: "
                "forward, loss, backward, optimizer update";
  let description = [{
    Differentiates @main (reverse mode, through GradientOpInterface) with
    respect to its `vram.param = #vram.param<trainable>` arguments and appends the loss,
    the backward pass (ops tagged `vram.phase = #vram.phase<backward>`; the gradients of
    parameters `vram.category = #vram.category<gradient>`) and the optimizer update. The
    labels and the optimizer state (`vram.param = #vram.param<optimizer_state>`) become
    arguments; the loss, the updated parameters and the updated state are
    returned. Each parameter is updated in place by one `vram.update`, so a
    returned parameter or state tensor is its argument's buffer. See
    docs/training.md.

    ```
    vram-opt model.onnx --batch=64 \
      --pass-pipeline='builtin.module(vram-train{optimizer=adam precision=amp-bf16})'
    ```
  }];
  let dependentDialects = ["::vram::ONNXDialect", "::vram::VramDialect"];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"cross-entropy\"",
           "mse, cross-entropy, or output (the model returns its scalar "
           "loss)">,
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "the forward result (by name) that gets the loss, when there are "
           "several">,
    Option<"labels", "labels", "std::string", /*default=*/"\"auto\"",
           "cross-entropy labels: one-hot (like the prediction), indices "
           "(int64 class per position), or auto (indices for predictions of "
           "rank >= 3, language models; one-hot otherwise)">,
    Option<"classAxis", "class-axis", "std::string", /*default=*/"\"last\"",
           "cross-entropy class axis: last ([batch, seq, vocabulary]) or 1 "
           "([N, C, d1, ...])">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "index label that counts for nothing; the loss is the mean over "
           "the other positions">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, momentum, adam, adamw, or none (return the gradients)">,
    Option<"learningRate", "lr", "double", /*default=*/"1e-3",
           "learning rate (PyTorch 2.x's default for SGD and Adam)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "momentum of the momentum optimizer">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's beta2">,
    Option<"epsilon", "eps", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 penalty (decoupled for adamw, whose default is PyTorch's "
           "0.01)">,
    Option<"update", "update", "std::string",
           /*default=*/"\"after-backward\"",
           "after-backward (every parameter once the backward pass is over) "
           "or in-backward (each as soon as its gradient is final)">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step: each step adds its gradients "
           "to a persistent buffer (#vram.param<gradient>), and every "
           "accumulate-th step updates with their mean and clears it">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "clip the gradients to this global L2 norm before the update "
           "(0: no clipping; after-backward only)">,
    Option<"precision", "precision", "std::string", /*default=*/"\"fp32\"",
           "fp32, fp16, bf16 (everything in that type), amp-fp16 or amp-bf16 "
           "(half compute, fp32 parameters: autocast), master-fp16 or "
           "master-bf16 (half parameters and gradients, fp32 master weights "
           "in the optimizer state: DeepSpeed, Megatron)">,
    Option<"lossScale", "loss-scale", "double", /*default=*/"65536.0",
           "static loss scale of fp16, amp-fp16 and master-fp16">,
    ListOption<"frozen", "frozen", "std::string",
               "parameter names (onnx.name) or globs that get no gradient">,
  ];
}

def TensorParallelPass : Pass<"vram-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Splits the paired linear layers of @main's forward pass "
                "among tensor-parallel ranks (Megatron-LM)";
  let description = [{
    Runs before vram-train, on the forward pass. Each pair of linear layers
    with only per-feature work between them (an MLP's two projections with
    the activation, attention's QKV and output projections with the heads)
    is split among the `tp` ranks: the first by columns (each rank its
    features, its heads), the second by rows, followed by a
    `shard.all_reduce <sum>`; the pair's replicated input is read through
    `vram.tensor_parallel_copy`, whose gradient is the all-reduce of the
    backward pass. Parameters become the rank's parts
    (`vram.tensor_slice_of` names the whole). The pairs are found by
    propagating the split between the layers; what it cannot carry (a
    normalization over the features, the embedding) stays replicated. See
    docs/parallel.md.

    ```
    vram-opt gpt.onnx --train="optimizer=adam precision=master-fp16"         --parallel="tp=8 dp=4 zero=1" --report
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect", "vram::VramDialect"];
  let options = [
    Option<"tensorParallel", "tp", "int64_t", /*default=*/"1",
           "tensor-parallel ranks each linear-layer pair is split among">,
    Option<"sequenceParallel", "sp", "bool", /*default=*/"false",
           "sequence parallelism: the token-wise ops between the pairs run "
           "on each rank's part of the tokens (reduce-scatter and "
           "all-gather instead of all-reduce and copy)">,
  ];
}

def PipelineStagePass : Pass<"vram-pipeline-stage", "mlir::ModuleOp"> {
  let summary = "Keeps one pipeline stage of @main's forward pass";
  let description = [{
    Runs before vram-train, on the forward pass. The model is cut into `pp`
    stages where a single activation crosses (between transformer layers),
    the layers shared out by cost, the ops before the first such place with
    stage 0 and those after the last with the last stage (Megatron-LM's
    embedding and head); @main becomes stage `stage`: the activation from
    the previous stage an argument (`vram.pipeline_recv = "previous"`), the
    one for the next its result (`vram.pipeline_send = "next"`). vram-train
    then builds the stage's backward from the gradient the next stage sends
    (an argument, `vram.pipeline_recv = "next"`) and returns the gradient
    of the received activation; vram-pipeline-schedule runs the stage's
    micro-batches. See docs/parallel.md.

    ```
    vram-opt gpt.onnx --train="optimizer=adam precision=master-fp16" \
        --parallel="pp=4 stage=0 microbatches=8" --report
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect", "vram::VramDialect"];
  let options = [
    Option<"stages", "pp", "int64_t", /*default=*/"1",
           "pipeline stages the model is cut into">,
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "the stage this rank runs (0 to pp - 1)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"0",
           "micro-batches per step, each of the step's batch (0: as many "
           "as stages)">,
  ];
}

def PipelineSchedulePass : Pass<"vram-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "Runs a pipeline stage's training step over its micro-batches "
                "in the 1F1B order";
  let description = [{
    Runs after vram-train on a step vram-pipeline-stage cut. The step's
    forward and backward are repeated for each micro-batch in the order
    stage s of P runs them under the 1F1B schedule (PipeDream-Flush, as
    Megatron-LM and DeepSpeed run it: P - 1 - s forwards first, then a
    backward after each forward, then the backwards left), with the
    activations and gradients from and to the neighbouring stages as
    `shard.recv` and `shard.send` on the grid's pipeline axis. The
    micro-batches' gradients are summed as they come and the optimizer
    applies their mean once; the loss (last stage) is the mean of theirs.
    Each data input holds every micro-batch's, stacked on a new first axis.
    The memory analysis then counts what the stage holds at its peak: the
    activations of up to P - s micro-batches in flight.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::shard::ShardDialect",
                           "mlir::tensor::TensorDialect"];
}

def ParallelizePass : Pass<"vram-parallelize", "mlir::ModuleOp"> {
  let summary = "Rewrites the training step @main into the program of one "
                "rank of a data-parallel run (DDP, ZeRO-1/2/3, FSDP)";
  let description = [{
    Runs after vram-train. Each rank runs the step on its own micro-batch
    (the step's batch); the gradients are averaged across the `dp` ranks
    and the ZeRO stage decides what each rank keeps: 0 everything (DDP),
    1 its 1/dp slice of the optimizer state, 2 also of the gradients, 3
    also of the parameters (FSDP). The collectives are `shard` ops on the
    grid `@ranks` added to the module (all_reduce <average> in place,
    reduce_scatter, all_gather, all_slice for the rank's own slice), so the
    memory analysis and the reports count one rank's memory, with the
    gathered parameters and the full gradients before their reduce-scatter
    as `communication` buffers. See docs/parallel.md.

    ```
    vram-opt model.onnx --train="optimizer=adam precision=master-fp16" \
        --parallel="dp=8 zero=3" --report
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "mlir::tensor::TensorDialect"];
  let options = [
    Option<"dataParallel", "dp", "int64_t", /*default=*/"1",
           "data-parallel ranks (each runs the step's batch)">,
    Option<"zeroStage", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (DDP), 1 (optimizer state sharded), 2 (and "
           "gradients), 3 (and parameters: FSDP)">,
  ];
}

#endif // VRAM_TRANSFORMS_PASSES_TD
