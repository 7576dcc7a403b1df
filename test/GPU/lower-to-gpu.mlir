// A small linalg-on-tensors program through the whole GPU pipeline: host
// code in the LLVM dialect calling the mgpu* runtime, every kernel in one
// gpu.binary, and its PTX written to a file.
// RUN: vram-opt %s --vram-lower-to-gpu="binary-file=%t.ptx" | FileCheck %s --check-prefix=HOST
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: vram-opt %s --vram-lower-to-gpu="chip=sm_80 binary-file=%t80.ptx" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM80 < %t80.ptx

// Three kernels: fill, matmul, bias add (the broadcast fuses into the add's
// indexing after canonicalization, or is its own kernel: at least three).
// HOST-LABEL: llvm.func @main(
// HOST: llvm.call @mgpuStreamCreate
// Device copies of %a (4*8*4 = 128 bytes), %b (8*16*4 = 512) and %bias (64):
// HOST: llvm.call @mgpuMemAlloc
// HOST: llvm.call @mgpuMemcpy
// HOST: gpu.launch_func <%{{.*}} : !llvm.ptr> @vram_kernels::@
// HOST: gpu.launch_func <%{{.*}} : !llvm.ptr> @vram_kernels::@
// HOST: gpu.launch_func <%{{.*}} : !llvm.ptr> @vram_kernels::@
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: llvm.call @mgpuMemFree
// HOST: llvm.func @_mlir_ciface_main(
// HOST: gpu.binary @vram_kernels
// HOST-NOT: gpu.binary

// PTX: .version 8.0
// PTX: .target sm_90
// PTX: .visible .entry main_kernel(

// SM80: .target sm_80

func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>,
                %bias: tensor<16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                      outs(%init : tensor<4x16xf32>) -> tensor<4x16xf32>
  %bb = linalg.broadcast ins(%bias : tensor<16xf32>)
                         outs(%empty : tensor<4x16xf32>) dimensions = [0]
  %sum = linalg.add ins(%mm, %bb : tensor<4x16xf32>, tensor<4x16xf32>)
                    outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %sum : tensor<4x16xf32>
}
