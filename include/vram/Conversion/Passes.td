//===- Passes.td - vram-opt's conversion passes ------------*- tablegen -*-===//

#ifndef VRAM_CONVERSION_PASSES_TD
#define VRAM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertONNXToLinalgPass : Pass<"vram-convert-onnx-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers the onnx frontend dialect to linalg on tensors";
  let description = [{
    Rewrites every supported `onnx` op into linalg on tensors (named ops
    where they exist: `linalg.conv_2d_nchw_fchw`, `linalg.matmul`,
    `linalg.batch_matmul`, `linalg.pooling_nchw_*`, `linalg.softmax`,
    `linalg.transpose`, `linalg.broadcast`; `linalg.generic` otherwise) plus
    the tensor, arith and math dialects. Unsigned ONNX integer types become
    signless integers (ops keep unsigned semantics). An op that cannot be
    lowered (`onnx.Node`, unsupported attributes) is an error naming the op
    and its ONNX node.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"
  ];
}

def ConvertVramToBufferizationPass
    : Pass<"vram-convert-vram-to-bufferization", "mlir::ModuleOp"> {
  let summary = "Lowers a memory plan's host copies to tensor copies that "
                "One-Shot Bufferize turns into real buffer copies";
  let description = [{
    Makes a planned program executable on CPU, where host memory is ordinary
    memory. Each copy becomes a `bufferization.alloc_tensor` with `copy`:
    One-Shot Bufferize always gives that op a fresh buffer and fills it with
    `memref.copy`, so the round trip device -> host -> device really moves the
    data twice, and the deallocation pipeline frees the host buffer after the
    prefetch that reads it last. `!vram.host<tensor<T>>` becomes `tensor<T>`,
    in function signatures, calls and returns too.
    Recompute clones are ordinary ops and stay as they are.

    ```mlir
    %h = vram.offload %a : tensor<16xf32> -> !vram.host<tensor<16xf32>>
    %b = vram.prefetch %h : !vram.host<tensor<16xf32>> -> tensor<16xf32>
    ```
    becomes
    ```mlir
    %h = bufferization.alloc_tensor() copy(%a) : tensor<16xf32>
    %b = bufferization.alloc_tensor() copy(%h) : tensor<16xf32>
    ```
    Any other op that carries a host value (a branch, a select) is an
    error: plans never make one.

    With `host-memory-space=NAME` (what `vram-lower-to-gpu` uses), the
    offload's copy is put in the memory space `"NAME"` (a string attribute)
    and the prefetch's in the default one, so that later passes know which
    buffers are host memory.
  }];
  let options = [
    Option<"hostMemorySpace", "host-memory-space", "std::string",
           /*default=*/"\"\"",
           "memory space (a string attribute) of offloaded buffers; empty: "
           "the default memory space, as on CPU">,
  ];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

//===----------------------------------------------------------------------===//
// GPU code generation (the vram-lower-to-gpu pipeline, docs/gpu.md)
//===----------------------------------------------------------------------===//

def GPUDeviceMemoryPass : Pass<"vram-gpu-device-memory", "mlir::func::FuncOp"> {
  let summary = "Puts every buffer a function computes on into GPU device "
                "memory, with explicit copies at its boundary";
  let description = [{
    On bufferized IR, before loops become kernels. Kernels only ever see
    device memory; the host only copies:
    - memref arguments are copied host→device at entry (`gpu.alloc` +
      `gpu.memcpy`); arguments the function may write are copied back
      device→host before each return;
    - `memref.alloc`/`memref.dealloc` become `gpu.alloc`/`gpu.dealloc`;
    - `memref.get_global` (constants, inline weights) is copied to device
      memory where it is read;
    - `memref.copy` becomes `linalg.copy`, so it runs as a kernel (it may be
      strided, which `gpu.memcpy` is not);
    - returned memrefs are copied device→host into fresh host buffers;
    - device buffers nothing frees are freed before each return, after the
      copies back;
    - buffers in the memory space `"host-memory-space"` (a plan's offloaded
      tensors) stay host `memref.alloc`s, page-locked with
      `gpu.host_register`, and copies to and from them become `gpu.memcpy`;
      their memory space is dropped.

    ```mlir
    func.func @f(%x: memref<4xf32>) -> memref<4xf32> {
      %y = memref.alloc() : memref<4xf32>
      ...
      return %y : memref<4xf32>
    }
    ```
    becomes
    ```mlir
    func.func @f(%x: memref<4xf32>) -> memref<4xf32> {
      %dx = gpu.alloc () : memref<4xf32>
      gpu.memcpy %dx, %x : memref<4xf32>, memref<4xf32>
      %y = gpu.alloc () : memref<4xf32>
      ...
      %h = memref.alloc() : memref<4xf32>
      gpu.memcpy %h, %y : memref<4xf32>, memref<4xf32>
      gpu.dealloc %dx : memref<4xf32>
      gpu.dealloc %y : memref<4xf32>
      return %h : memref<4xf32>
    }
    ```
  }];
  let options = [
    Option<"hostMemorySpace", "host-memory-space", "std::string",
           /*default=*/"\"vram.pinned_host\"",
           "memory space (a string attribute) of buffers that live in pinned "
           "host memory">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect"];
}

def GPUOverlapCopiesPass : Pass<"vram-gpu-overlap-copies", "mlir::ModuleOp"> {
  let summary = "Runs a plan's offloads and prefetches on the runtime's copy "
                "stream, overlapping the kernels until their data is needed";
  let description = [{
    After `vram-gpu-device-memory`, before the loops become kernels. A
    `gpu.memcpy` between a view at a constant offset of a device allocation
    (the arena) and a view of the pinned host arena, which is what a plan's
    offload and prefetch lower to, becomes a call of the runtime's
    `vramRuntimeOffloadAsync` or `vramRuntimePrefetchAsync` (a copy on the
    copy stream, returning its event), and a call of
    `vramRuntimeFinishCopy` (the host waits for the event) right before the
    first later op of its block that reads, writes or frees bytes either
    side of the copy may share: the prefetched tensor's first reader, the
    first kernel that reuses an offloaded tensor's device bytes, the
    release of the host arena; else before the block's terminator. The
    kernels in between run while the copy does. `gpu-async-region` makes the
    host wait for the compute stream before each call, so a copy starts
    after the kernels before it, and needs no stream handle (none exists
    before `convert-gpu-to-llvm`). Other copies stay stream-ordered
    `gpu.memcpy`s.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect"];
}

def GPUMapParallelLoopsPass : Pass<"vram-gpu-map-parallel-loops",
                                   "mlir::func::FuncOp"> {
  let summary = "Maps host-level loops to GPU blocks and threads";
  let description = [{
    Prepares `convert-parallel-loops-to-gpu`. Every outermost `scf.parallel`
    is collapsed to one dimension and tiled by `block-size`: tiles map to
    `block_x`, the iterations of a tile to `thread_x` (guarded against the
    last, partial tile). One linear index over all parallel dimensions keeps
    neighbouring threads on neighbouring elements of the innermost dimension
    (coalesced accesses) and never exceeds the grid's y/z limits (65535),
    unlike upstream `gpu-map-parallel-loops`, which puts one thread in each
    block. Host-level code that touches memory outside any parallel loop
    (serial `scf.for` nests, `memref.load`/`store`) is wrapped, run by run,
    into a one-thread kernel, since the host cannot read device memory;
    the arithmetic on what such code loads goes with it. A serial
    accumulation loop (`B[f(i)] += g(i)`, a scatter-add) whose other reads
    provably miss `B` becomes a parallel loop of atomic adds instead.
    Parallel loops nested in mapped code run sequentially in their thread.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block">,
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::scf::SCFDialect"];
}

def GPUMergeKernelModulesPass : Pass<"vram-gpu-merge-kernel-modules",
                                     "mlir::ModuleOp"> {
  let summary = "Moves every outlined kernel into one gpu.module";
  let description = [{
    `gpu-kernel-outlining` makes one `gpu.module` per kernel; a ResNet has
    about a hundred. One module gives one PTX/cubin per program, loaded once,
    and one file to inspect or hand to `ptxas`. Launches are updated to the
    merged module; a name clash between kernels is an error.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string",
           /*default=*/"\"vram_kernels\"", "name of the merged gpu.module">,
  ];
}

def WriteGPUBinaryPass : Pass<"vram-write-gpu-binary", "mlir::ModuleOp"> {
  let summary = "Writes the object of the module's gpu.binary to a file";
  let description = [{
    After `gpu-module-to-binary`: writes the object of the one `gpu.binary`
    op (PTX text for format `isa`, a cubin for `bin`, a fatbinary for
    `fatbin`) to `output`. The IR is not changed.

    ```
    vram-opt m.mlir --vram-lower-to-gpu="format=isa" \
      --vram-write-gpu-binary="output=m.ptx" -o /dev/null
    ```
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write ('-': standard output)">,
  ];
}

#endif // VRAM_CONVERSION_PASSES_TD
