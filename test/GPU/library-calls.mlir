// vram-call-library-kernels{target=gpu}: the GPU pipeline's matmuls and
// convolutions become calls of libvram_gpu_libraries (cuBLAS, cuDNN) in the
// host code, and each convolution gets a workspace buffer, allocated before
// the call so that the static arena places it: the column matrix of one
// image, input channels x filter taps x output positions x 4 bytes, the
// figure the memory analysis counts as the convolution's workspace.
// RUN: vram-opt %s --pass-pipeline="builtin.module(vram-lower-to-buffers,vram-call-library-kernels{target=gpu})" | FileCheck %s
// RUN: vram-opt %s --vram-lower-to-gpu | FileCheck %s --check-prefix=HOST
// RUN: not vram-opt %s --pass-pipeline="builtin.module(vram-lower-to-buffers,vram-call-library-kernels{target=tpu})" 2>&1 | FileCheck %s --check-prefix=TARGET

// CHECK-LABEL: func.func @main
// CHECK: call @vram_gpu_matmul_f32({{.*}}, %c0_i64, %c0_i64{{.*}}) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, i64, i64) -> ()
// A weight gradient's A^T B: transA.
// CHECK: call @vram_gpu_matmul_f32({{.*}}, %c1_i64, %c0_i64{{.*}})
// CHECK: call @vram_gpu_batch_matmul_f32({{.*}}) : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>) -> ()
// No workspace for cuBLAS: the first i8 buffer is the first convolution's.
// CHECK-NOT: xi8>
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %at: tensor<8x4xf32>,
                %x3: tensor<3x4x8xf32>, %y: tensor<3x8x5xf32>,
                %x: tensor<2x3x10x10xf32>, %w: tensor<5x3x3x3xf32>,
                %w1: tensor<7x3x1x1xf32>,
                %s: tensor<1x2x11xf32>, %k: tensor<6x2x3xf32>,
                %g: tensor<1x4x1x9x9xf32>, %gk: tensor<4x1x1x3x3xf32>,
                %v: tensor<1x2x4x4x4xf32>, %vk: tensor<3x2x2x2x2xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<3x4x5xf32>,
        tensor<2x5x8x8xf32>, tensor<2x7x10x10xf32>, tensor<1x6x4xf32>,
        tensor<1x4x1x4x4xf32>, tensor<1x3x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = linalg.matmul
         indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                          affine_map<(m, n, k) -> (k, n)>,
                          affine_map<(m, n, k) -> (m, n)>]
         ins(%at, %b : tensor<8x4xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e3 = tensor.empty() : tensor<3x4x5xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  %bm = linalg.batch_matmul ins(%x3, %y : tensor<3x4x8xf32>, tensor<3x8x5xf32>) outs(%f3 : tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
// 3x3, stride 1: 3 channels x 9 taps x (8 x 8) positions x 4 B = 6,912 B.
// CHECK: %[[WS2:.*]] = memref.alloc() : memref<6912xi8>
// CHECK: %[[CAST2:.*]] = memref.cast %[[WS2]] : memref<6912xi8> to memref<?xi8>
// CHECK: call @vram_gpu_conv2d_nchw_fchw_f32({{.*}}, %[[CAST2]], {{.*}}) : (memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?xi8>, i64, i64, i64, i64) -> ()
// 1x1, stride 1: a plain product, no workspace.
// CHECK: memref.alloc() : memref<0xi8>
// CHECK: call @vram_gpu_conv2d_nchw_fchw_f32
// 1-d, kernel 3, stride 2, dilation 2: 2 channels x 3 taps x 4 positions x 4 B = 96 B.
// CHECK: memref.alloc() : memref<96xi8>
// CHECK: call @vram_gpu_conv1d_ncw_fcw_f32({{.*}}) : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?xi8>, i64, i64) -> ()
// Grouped (depthwise, 4 groups of 1 channel), 3x3, stride 2: every group's
// channels count: 4 x 9 taps x (4 x 4) positions x 4 B = 2,304 B.
// CHECK: memref.alloc() : memref<2304xi8>
// CHECK: call @vram_gpu_conv2d_ngchw_gfchw_f32
// 3-d, 2x2x2, stride 1: 2 channels x 8 taps x (3 x 3 x 3) positions x 4 B = 1,728 B.
// CHECK: memref.alloc() : memref<1728xi8>
// CHECK: call @vram_gpu_conv3d_ncdhw_fcdhw_f32
  %ec = tensor.empty() : tensor<2x5x8x8xf32>
  %fc = linalg.fill ins(%zero : f32) outs(%ec : tensor<2x5x8x8xf32>) -> tensor<2x5x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<2x3x10x10xf32>, tensor<5x3x3x3xf32>) outs(%fc : tensor<2x5x8x8xf32>) -> tensor<2x5x8x8xf32>
  %e1 = tensor.empty() : tensor<2x7x10x10xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x7x10x10xf32>) -> tensor<2x7x10x10xf32>
  %p = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%x, %w1 : tensor<2x3x10x10xf32>, tensor<7x3x1x1xf32>) outs(%f1 : tensor<2x7x10x10xf32>) -> tensor<2x7x10x10xf32>
  %es = tensor.empty() : tensor<1x6x4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %c1 = linalg.conv_1d_ncw_fcw {strides = dense<2> : tensor<1xi64>, dilations = dense<2> : tensor<1xi64>}
         ins(%s, %k : tensor<1x2x11xf32>, tensor<6x2x3xf32>) outs(%fs : tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  %eg = tensor.empty() : tensor<1x4x1x4x4xf32>
  %fg = linalg.fill ins(%zero : f32) outs(%eg : tensor<1x4x1x4x4xf32>) -> tensor<1x4x1x4x4xf32>
  %dw = linalg.conv_2d_ngchw_gfchw {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
         ins(%g, %gk : tensor<1x4x1x9x9xf32>, tensor<4x1x1x3x3xf32>) outs(%fg : tensor<1x4x1x4x4xf32>) -> tensor<1x4x1x4x4xf32>
  %ev = tensor.empty() : tensor<1x3x3x3x3xf32>
  %fv = linalg.fill ins(%zero : f32) outs(%ev : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  %c3 = linalg.conv_3d_ncdhw_fcdhw {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
         ins(%v, %vk : tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>) outs(%fv : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  return %m, %t, %bm, %c, %p, %c1, %dw, %c3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<3x4x5xf32>, tensor<2x5x8x8xf32>, tensor<2x7x10x10xf32>, tensor<1x6x4xf32>, tensor<1x4x1x4x4xf32>, tensor<1x3x3x3x3xf32>
}

// Through the whole pipeline, the calls are host code and no kernel is
// left for the products: the only kernels fill the outputs.
// HOST-DAG: llvm.call @vram_gpu_matmul_f32(
// HOST-DAG: llvm.call @vram_gpu_batch_matmul_f32(
// HOST-DAG: llvm.call @vram_gpu_conv2d_nchw_fchw_f32(
// HOST-DAG: llvm.call @vram_gpu_conv2d_ngchw_gfchw_f32(
// HOST-DAG: llvm.func @_mlir_ciface_vram_gpu_conv3d_ncdhw_fcdhw_f32(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64)
// HOST-NOT: linalg.

// TARGET: error: vram-call-library-kernels: unknown target 'tpu' (expected cpu or gpu)
