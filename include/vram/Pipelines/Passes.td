//===- Passes.td - passes of vram-opt's lowering pipelines -*- tablegen -*-===//
//
// Steps of the CPU pipeline that upstream MLIR has no pass for.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PIPELINES_PASSES_TD
#define VRAM_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def EmitCInterfacePass : Pass<"vram-emit-c-interface", "mlir::ModuleOp"> {
  let summary = "Marks the entry function for a C-callable wrapper";
  let description = [{
    Sets `llvm.emit_c_interface` on the entry `func.func`, so that
    `convert-func-to-llvm` also emits `_mlir_ciface_<name>`, which takes
    every memref as a pointer to its descriptor and returns results through
    a pointer: the calling convention `vram-run` (and any C caller) uses.
    The entry's arguments and results lose the frontend's `vram.*`
    annotations (`vram.param`, `vram.flat_of`), which the analyses read
    before lowering: the host code then reads without the vram dialect
    (`mlir-translate --mlir-to-llvmir`).

    ```mlir
    func.func @main(%a: memref<4xf32>) -> memref<4xf32>
    // becomes
    func.func @main(%a: memref<4xf32>) -> memref<4xf32>
        attributes {llvm.emit_c_interface}
    ```
    A missing entry function is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "Name of the entry function">
  ];
}

def PackEntryArgumentsPass
    : Pass<"vram-pack-entry-arguments", "mlir::ModuleOp"> {
  let summary = "Makes the entry function take its arguments and results "
                "through one array of pointers";
  let description = [{
    Rewrites the entry `func.func` (after bufferization, before the
    conversion to LLVM) to take a single `!llvm.ptr`: an array holding one
    pointer per argument, then one per result. An argument is loaded from
    where its pointer points (a memref as its descriptor, laid out as the
    LLVM lowering lays it out); a result is stored there.

    ```mlir
    func.func @main(%a: memref<4xf32>, %out: memref<4xf32>)
    // becomes
    func.func @main(%args: !llvm.ptr)  // %args[0] -> %a's descriptor, ...
    ```
    Why not upstream's C interface: it forwards every descriptor field as
    one scalar argument of the function it wraps, and the packed wrapper the
    ExecutionEngine adds forwards them again; for a program with thousands
    of results (out-params) that is a call with tens of thousands of
    arguments, on which LLVM's interprocedural passes and instruction
    selection take minutes. Here every argument costs two loads. An entry
    that passes no memref is left as it is (a harness `@main() -> i32` that
    `mlir-runner` calls). A missing entry function is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"main\"",
           "Name of the entry function">
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def DecomposeAggregatedOpsPass
    : InterfacePass<"vram-decompose-aggregated-ops",
                    "mlir::FunctionOpInterface"> {
  let summary = "Decomposes linalg aggregated ops (linalg.softmax) into "
                "structured ops";
  let description = [{
    Ops such as `linalg.softmax` implement `AggregatedOpInterface` but are
    not structured ops: `convert-linalg-to-loops` cannot lower them. This
    pass calls each op's own `decomposeOperation` (max, sub + exp, sum,
    div as `linalg.generic`s on tensors), which upstream exposes only as a
    transform-dialect op. An op whose decomposition fails is an error.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def FuseElementwiseOpsPass
    : InterfacePass<"vram-fuse-elementwise-ops",
                    "mlir::FunctionOpInterface"> {
  let summary = "Fuses chains of elementwise linalg.generic ops on tensors "
                "into one loop nest, without computing anything twice";
  let description = [{
    Each ONNX op lowers to its own linalg op, so a chain such as batch
    normalization then ReLU6, or x * sigmoid(x), writes and reads back a
    whole tensor between every two steps: on CPU that memory traffic, not
    arithmetic, is most of the time of the small-channel networks. This
    pass applies upstream's elementwise fusion
    (`linalg::populateElementwiseOpsFusionPatterns`) where it repeats no
    work and keeps the op order: the producer's result has no other use,
    the consumer reads each of its elements once (a permutation indexing
    map), and nothing that computes or touches memory runs between the two
    (fused across a memory plan's copy or another op, the producer's inputs
    would stay live until the consumer). A per-channel value broadcast over
    an image (the scale of a squeeze-and-excitation block) stays its own
    op, computed once per channel. Fewer tensors also
    means fewer buffers for the arena. Upstream's `linalg-fuse-elementwise-ops`
    fuses whenever the producer has one use, broadcasts included, and also
    folds reshapes into generics and constants into their users.

    A fused body stops growing at `max-body-ops` operations: each fusion
    copies both bodies into a new op, so fusing a chain of n ops into one
    took time quadratic in n (a chain of 9,000 Relus: 15.5 s in this pass,
    0.17 s capped at 64), and a loop body of a few dozen ops saves all the
    memory traffic there is to save.
  }];
  let options = [
    Option<"maxBodyOps", "max-body-ops", "unsigned", /*default=*/"64",
           "Operations a fused body may hold (its yield included)">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def PadInPlacePass
    : InterfacePass<"vram-pad-in-place", "mlir::FunctionOpInterface"> {
  let summary = "Makes the producer of a padded tensor write into the "
                "interior of the padded one";
  let description = [{
    A convolution with padding reads `tensor.pad` of its input, which
    bufferizes to a new buffer, a fill and a strided copy of the whole
    input (`memrefCopy` on CPU, one row at a time). When the padded tensor
    is the only use of a linalg op's result (the activation before the
    convolution) and that op writes into a `tensor.empty`, the
    pad becomes a fill of the padded tensor, and the producer writes into
    its interior (`tensor.extract_slice`) which is then inserted back
    (`tensor.insert_slice` of the same subset): one-shot bufferization
    computes the producer in place in the padded buffer and copies nothing.
    One buffer fewer, and no copy: what upstream's empty-tensor elimination
    does, for pads only, only where the producer's result has no other
    reader (which would otherwise read a strided view of the padded buffer)
    and only where the producer runs right before the pad (earlier, the
    padded buffer would be live across what runs in between).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def DropArgumentResultsPass
    : Pass<"vram-drop-argument-results", "mlir::ModuleOp"> {
  let summary = "Drops results that are an argument's buffer, updated in "
                "place, and records which argument each one is";
  let description = [{
    After bufferization, a training step's updated parameters and optimizer
    state are the buffers of the arguments they came in (`vram.update`
    writes in place). Returning them again would make the caller-owns-
    results convention copy every one (ownership-based deallocation clones a
    returned argument). This pass removes such results from public
    functions nobody calls and sets `vram.results_in_arguments`, one entry
    per original result: the index of the argument that holds it, or -1 for
    a result that is still returned.

    ```mlir
    func.func @main(%p: memref<4xf32>, %g: memref<4xf32>)
        -> (memref<f32>, memref<4xf32>) { ... return %loss, %p }
    // becomes
    func.func @main(%p: memref<4xf32>, %g: memref<4xf32>) -> memref<f32>
        attributes {vram.results_in_arguments = array<i64: -1, 0>}
    ```
    The upstream `drop-equivalent-buffer-results` drops the same results
    without saying which argument holds them, which a caller needs.
  }];
}

def LowerSCFToCFPass : Pass<"vram-scf-to-cf"> {
  let summary = "Lowers structured control flow to a CFG, as upstream's "
                "convert-scf-to-cf, in time linear in the block's length";
  let description = [{
    The same rewrites as `convert-scf-to-cf` (upstream's patterns: `scf.for`,
    `scf.if`, `scf.while`, `scf.index_switch`, `scf.execute_region`, and
    `scf.parallel` / `scf.forall` through `scf.for`), applied in a different
    order. Lowering an op splits its block there and moves every op after it
    into a new block; upstream lowers the first op first, so a function of
    N loops in one block moves O(N^2) ops (a chain of 9,000 elementwise ops
    took 72 s there). This pass lowers the last op of each block first, so
    the ops after it are only those up to the next, already lowered, op.
    An op no pattern lowers is an error.
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect",
                           "mlir::scf::SCFDialect"];
}

def CallLibraryKernelsPass
    : Pass<"vram-call-library-kernels", "mlir::ModuleOp"> {
  let summary = "Replaces f32 matmul, batch matmul and convolution on "
                "buffers by calls of tuned library kernels (BLAS on CPU, "
                "cuBLAS and cuDNN on GPU)";
  let description = [{
    Heavy ops go to libraries, the way XLA's and IREE's backends route
    them: `linalg.matmul` (default indexing maps, or maps that transpose A
    and/or B, as a Gemm's transA/transB and a weight gradient's A^T dY
    lower; the kernel takes the two flags), `linalg.batch_matmul` (default
    indexing maps), `linalg.conv_1d_ncw_fcw`, `linalg.conv_2d_nchw_fchw`,
    `linalg.conv_3d_ncdhw_fcdhw` and the grouped `linalg.conv_2d_ngchw_gfchw`
    on f32 memrefs with the identity layout in the default memory space
    become `func.call`s of `<prefix>matmul_f32`, `<prefix>batch_matmul_f32`,
    `<prefix>conv1d_ncw_fcw_f32`, `<prefix>conv2d_nchw_fchw_f32`,
    `<prefix>conv3d_ncdhw_fcdhw_f32` and `<prefix>conv2d_ngchw_gfchw_f32`
    (a convolution passes its strides and dilations per spatial dim after
    the buffers), declared with `llvm.emit_c_interface`. The operands are
    cast to dynamic shapes, so one declaration serves every shape. Like the
    ops they replace, the kernels accumulate into the output. Other element
    types and layouts stay linalg ops.

    On CPU, a convolution whose output was just filled with a bias per
    output feature (a `linalg.broadcast` of a 1-d buffer along every dim but
    dim 1 of the buffer the convolution writes, directly or through an
    `expand_shape`, with only views and constants between: how a Conv with
    a bias lowers) calls the kernel's `_bias` variant instead
    (`vram_conv2d_nchw_fchw_bias_f32`, ...; the bias buffer after the
    output), and the broadcast goes: each image's output is set to the bias
    on that image's thread right before the product accumulates into it,
    while it is in cache, instead of in a pass over the whole output.

    `target=cpu` (prefix `vram_`): `libvram_cpu_kernels`
    (runtime/VramCpuKernels.cpp, on OpenBLAS's `cblas_sgemm`; convolution
    as im2col and one GEMM per image and group, or, with one input channel
    per group as in a depthwise convolution, a direct loop per filter tap),
    which `vram-run` loads.

    `target=gpu` (prefix `vram_gpu_`): `libvram_gpu_libraries`
    (runtime/VramGpuLibraries.cpp, cuBLAS's SGEMM and cuDNN's convolution,
    in FP32 arithmetic). A convolution also gets a workspace buffer,
    allocated before the call, so that the static arena places it like any
    other buffer: the column matrix of one image (input channels x filter
    taps x output positions, 4 bytes each; none for a 1x1 filter with unit
    strides), the figure the memory analysis already counts as the
    convolution's workspace; the library runs the fastest cuDNN algorithm
    that needs no more. cuBLAS gets no workspace.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "The library: cpu (BLAS kernels) or gpu (cuBLAS, cuDNN)">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

def CopiesToLinalgPass : Pass<"vram-copies-to-linalg"> {
  let summary = "Makes strided buffer copies linalg.copy loop nests";
  let description = [{
    A `memref.copy` whose source or target is not one contiguous block
    (a concatenation's slice of the result, the interior of a padded
    buffer) lowers to a call of MLIR's `memrefCopy`, which copies element
    by element through its descriptors: 594 such copies made up much of
    DenseNet-121's run time, whose layers each copy every earlier feature
    map into the next concatenation. As `linalg.copy` it is a loop nest
    like any other, outlined and vectorized along its rows (contiguous in
    both buffers here). Copies of one contiguous block stay: they lower to
    `memcpy`. Dynamically shaped copies stay too.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def OutlineLinalgOpsPass
    : Pass<"vram-outline-linalg-ops", "mlir::ModuleOp"> {
  let summary = "Moves each linalg op on buffers into a function of its own, "
                "called in its place";
  let description = [{
    LLVM optimizes a function at a time, and its loop passes (induction
    variable simplification, loop rotation, SCEV's guard queries) take time
    quadratic in the number of loops of one function: a model's step
    lowered into one function of thousands of loop nests spent minutes in
    the JIT at O3 (a 1,000-op chain, 25 s; 3,000 ops, 195 s). After this
    pass each loop nest is its own `no_inline` function (LLVM attribute
    `noinline`, so the inliner does not rebuild the one large function), and
    compile time is linear in the op count.

    Each `linalg` op on memrefs (no tensor results) in a function body
    becomes `func.call @<function>_<op>_<N>(...)` of a private function
    (internal linkage in LLVM: no packed wrapper from the ExecutionEngine) that
    takes the op's operands and the values its regions use from above;
    constants are cloned into the new function instead, so that LLVM still
    folds them. An op whose function would be identical to one made before
    (same op, attributes, constants and argument types: the repeated layers
    of a network) calls that one instead, so LLVM compiles each distinct
    loop nest once: BERT-base's 541 loop nests are 27 functions, and its
    compile time went from 6.0 s to 0.9 s. A view at a static offset into
    a buffer is passed at a dynamic one (`memref.cast`), so ops on
    different slices of one buffer (the copies into a concatenation) share
    a function too.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect"];
}

def ParallelizeLinalgOpsPass
    : Pass<"vram-parallelize-linalg-ops", "mlir::ModuleOp"> {
  let summary = "Shares the large loop nests left on the CPU path out "
                "among threads";
  let description = [{
    The library kernels run on OpenMP's threads, but the loop nests around
    them (bias broadcasts, activations, padding fills, normalizations) ran
    on one: with two cores, MobileNetV2 at batch 8 spent about 60% of a
    call in them while the other thread waited. Every linalg op on
    statically shaped buffers with at least `min-iterations` iterations is
    split along its leading parallel loops, as few as give `min-chunks`
    chunks or more (the batch of an 8-image activation, its channels at
    batch 1), into an OpenMP parallel region around a work-sharing loop
    over those loops (`omp.parallel`, `omp.wsloop`, `omp.loop_nest`
    collapsed into one range; the default static schedule gives each
    thread a contiguous range of chunks) whose body is the op on one chunk.
    It runs on the same OpenMP runtime (LLVM's libomp) as the library
    kernels, so one pool of threads serves both. The innermost loop is never split: each
    chunk is still a loop nest that vram-vectorize-linalg-ops vectorizes
    along its rows. Smaller ops stay serial: starting the threads costs
    more than they save.
  }];
  let options = [
    Option<"minIterations", "min-iterations", "int64_t",
           /*default=*/"65536",
           "Iterations below which a loop nest stays on one thread">,
    Option<"minChunks", "min-chunks", "int64_t", /*default=*/"16",
           "Chunks the leading parallel loops are split into, at least">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::omp::OpenMPDialect",
                           "mlir::scf::SCFDialect"];
}

def VectorizeLinalgOpsPass
    : Pass<"vram-vectorize-linalg-ops", "mlir::ModuleOp"> {
  let summary = "Vectorizes the linalg ops on buffers left on the CPU path "
                "along their innermost loop";
  let description = [{
    LLVM vectorizes nothing in the JIT: it optimizes without a target
    machine, so its cost model has no vector registers, and with one the
    loop vectorizer doubled compile times for 3-15% (its runtime alias
    checks on every loop). This pass vectorizes in MLIR, where the shapes
    are known. Every linalg op on statically shaped buffers of whole-byte
    elements whose loops are all parallel and whose innermost loop runs
    along the innermost, unit-stride dimension of each operand it indexes
    (elementwise chains, bias broadcasts, fills, transposes that keep the
    last dimension) is tiled to rows along that loop, one step along every
    other, and each tile vectorized. A row of up to four vectors of
    `vector-width` elements is one vector (LLVM splits it into registers);
    a longer row is cut into vectors, and the rest that no vector fills is
    split off as an op of its own, vectorized at its own length: every
    vector has a static length, so no masks. Transfers become 1-d loads
    and stores, and math functions upstream's polynomial approximations (a
    few ulp in f32), which stay vectors where libm calls would be scalar.

    Matmuls and convolutions (library calls or their own loops),
    reductions, strided innermost access, i1 and i4 elements (LLVM packs
    their vectors as bits) and bodies the vectorizer cannot take (loads
    from other buffers: gathers) are left to convert-linalg-to-loops.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "Elements per vector along the innermost loop">,
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def FitPlanToArenaPass : Pass<"vram-fit-plan-to-arena", "mlir::ModuleOp"> {
  let summary = "Plans like vram-plan, then re-plans under a lower budget "
                "until the lowered program's device memory fits";
  let description = [{
    vram-plan meets the budget in live bytes (the memory analysis' peak),
    but the GPU program allocates an arena whose buffers sit at fixed
    offsets: packing intervals leaves holes, and a plan's many short-lived
    recomputed and prefetched tensors leave more (ResNet-18's training step
    planned to half its peak packs 16% above its live bytes, and ran 14%
    over the budget on an H200). This pass plans each function with
    vram-plan and vram-verify-plan, lowers a copy of the planned module to
    buffers exactly as vram-lower-to-gpu does (buildDeviceBufferPipeline),
    and counts its device bytes: the arenas, the buffers that escape them
    and the device copies of the arguments. While they exceed the budget it
    plans again under the budget minus the excess (at most `attempts`
    times), and last of all under the smallest budget the planner meets in
    live bytes. A budget that cannot be met is reported with the smallest
    budget the lowered program meets: that last plan's device bytes, which
    a run with that budget then meets. The function keeps `vram.budget` = the budget asked for and
    gets `vram.lowered_peak` (the device bytes counted); `vram.planned_peak`
    is the plan's live-byte peak under the lower budget it was made for.
    A module that does not lower (an op without a lowering) keeps its
    first plan, with a warning. Alignment counts: a toy program of a few
    hundred bytes cannot fit a budget below the 256-byte slots of its
    arena (`check-arena=false` holds such budgets in live bytes only).
  }];
  let options = [
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "memory budget (as vram-plan's)">,
    Option<"device", "device", "std::string", /*default=*/"\"H100\"",
           "device profile (as vram-plan's)">,
    Option<"allowOffload", "allow-offload", "bool", /*default=*/"true",
           "allow offloading tensors to host memory">,
    Option<"allowReorder", "allow-reorder", "bool", /*default=*/"true",
           "also plan the op orders chosen for memory and keep the fastest "
           "plan (as vram-plan's allow-reorder)">,
    Option<"maxOverhead", "max-overhead", "double", /*default=*/"-1.0",
           "largest acceptable extra time (as vram-plan's)">,
    Option<"printPlan", "print-plan", "bool", /*default=*/"false",
           "print the plan that is kept, as vram-plan's print-plan does">,
    Option<"attempts", "attempts", "unsigned", /*default=*/"6",
           "plans to try before giving up (0 counts as 1)">,
    Option<"checkArena", "check-arena", "bool", /*default=*/"true",
           "false: plan once and hold the budget in live bytes only (for a "
           "program that another allocator places), as vram-plan does">,
  ];
}

#endif // VRAM_PIPELINES_PASSES_TD
