// A function vram-fit-plan-to-arena marked vram.no_library_workspace (its
// lowered program fits the budget only so) gives cuDNN no workspace: the
// 3x3 convolution that gets 3 x 9 x 64 x 4 = 6,912 bytes otherwise
// (library-calls.mlir) gets a 0-byte buffer, and cuDNN runs implicit GEMM.
// RUN: vram-opt %s --pass-pipeline="builtin.module(vram-lower-to-buffers,vram-call-library-kernels{target=gpu})" | FileCheck %s
// CHECK: %[[WS:.*]] = memref.alloc() : memref<0xi8>
// CHECK: %[[CAST:.*]] = memref.cast %[[WS]] : memref<0xi8> to memref<?xi8>
// CHECK: call @vram_gpu_conv2d_nchw_fchw_f32({{.*}}, %[[CAST]], {{.*}})
// CHECK-NOT: memref<6912xi8>
func.func @main(%x: tensor<2x3x10x10xf32>, %w: tensor<5x3x3x3xf32>)
    -> tensor<2x5x8x8xf32> attributes {vram.no_library_workspace} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5x8x8xf32>) -> tensor<2x5x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x10x10xf32>, tensor<5x3x3x3xf32>) outs(%f : tensor<2x5x8x8xf32>) -> tensor<2x5x8x8xf32>
  return %c : tensor<2x5x8x8xf32>
}
