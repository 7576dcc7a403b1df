// vram-call-library-kernels: f32 matmul, batch matmul and (grouped) NCHW convolution on
// contiguous buffers become calls of the BLAS-backed kernels; the operands
// are cast to dynamic shapes so one declaration serves every shape, and a
// convolution passes its strides and dilations (h, w) after them.
// RUN: vram-opt %s --vram-call-library-kernels | FileCheck %s
// The kernels are declared once each, at the top of the module.
// CHECK-DAG: func.func private @vram_matmul_f32(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @vram_batch_matmul_f32(memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @vram_conv2d_nchw_fchw_f32(memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @vram_conv2d_nchw_fchw_bias_f32(memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?x?x?x?xf32>, memref<?xf32>, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @vram_conv2d_ngchw_gfchw_f32(memref<?x?x?x?x?xf32>, memref<?x?x?x?x?xf32>, memref<?x?x?x?x?xf32>, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
// The kernels compute what the loops would (onnx-node-tests.test runs
// ONNX's MatMul, Gemm and Conv cases against their reference outputs):
// RUN: vram-run %S/Inputs/conv-strided-dilated.onnxtext --print | FileCheck %s --check-prefix=VALUES
// RUN: vram-opt %S/Inputs/conv-strided-dilated.onnxtext --emit=llvm | FileCheck %s --check-prefix=LLVM
// X[c, h, w] = 25c + 5h + w (2 x 5 x 5), strides (2, 1), dilations (2, 2):
// output (oh, ow) reads rows 2oh, 2oh + 2 and columns ow, ow + 2. Filter 0
// is all ones, bias 0.5: Y[0, 0, 0] = 0.5 + (0 + 2 + 10 + 12) + (25 + 27 +
// 35 + 37) = 148.5; a step of ow adds 1 per tap (8 taps: +8), a step of oh
// adds 10 per tap (+80). Filter 1 is X[0, 2oh, ow] - X[1, 2oh + 2, ow + 2],
// bias -1: -1 - 25 - 10 - 2 = -38 everywhere.
// VALUES: {{\[\[\[\[}}148.5, 156.5, 164.5]
// VALUES-NEXT: [228.5, 236.5, 244.5]]
// VALUES-NEXT: {{\[\[}}-38, -38, -38]
// VALUES-NEXT: [-38, -38, -38]]]]
// The bias, broadcast into the output right before the convolution, goes
// into the kernel (its `_bias` variant) instead:
// LLVM: llvm.call @_mlir_ciface_vram_conv2d_nchw_fchw_bias_f32

// Grouped convolutions (conv-grouped.onnxtext), both through the kernel:
// RUN: vram-run %S/Inputs/conv-grouped.onnxtext --print | FileCheck %s --check-prefix=GROUPED
// RUN: vram-opt %S/Inputs/conv-grouped.onnxtext --emit=llvm | FileCheck %s --check-prefix=GROUPED-LLVM
// D, depthwise (one channel per group, the direct loop): XD[c, h, w] =
// 16c + 4h + w (2 x 4 x 4), 2 x 2 filters, strides 2. Filter 0 is all ones:
// D[0, 0, 0] = 0 + 1 + 4 + 5 = 10, a step of ow adds 2 per tap (+8), of oh
// 8 per tap (+32). Filter 1 is XD[1, 2oh, 2ow] - XD[1, 2oh + 1, 2ow + 1]:
// -(4 + 1) = -5 everywhere.
// GROUPED: output 0 'D'
// GROUPED-NEXT: {{\[\[\[\[}}10, 18]
// GROUPED-NEXT: [42, 50]]
// GROUPED-NEXT: {{\[\[}}-5, -5]
// GROUPED-NEXT: [-5, -5]]]]
// G, two channels per group (im2col and a GEMM per group): XG[c, h, w] =
// 9c + 3h + w (4 x 3 x 3), 2 x 2 filters. Group 0's filter is all ones over
// channels 0 and 1: (0 + 1 + 3 + 4) + (9 + 10 + 12 + 13) = 52, +8 per step
// of ow, +24 per step of oh. Group 1's picks XG[3, oh, ow] = 27 + 3oh + ow.
// GROUPED: output 1 'G'
// GROUPED-NEXT: {{\[\[\[\[}}52, 60]
// GROUPED-NEXT: [76, 84]]
// GROUPED-NEXT: {{\[\[}}27, 28]
// GROUPED-NEXT: [30, 31]]]]
// GROUPED-LLVM-COUNT-2: llvm.call @vram_conv2d_ngchw_gfchw_f32(

// 1-d and 3-d convolutions (conv-1d-3d.onnxtext) go through the same im2col
// and GEMM. X3[d, h, w] = 9d + 3h + w (3 x 3 x 3), 2 x 2 x 2 filters. Y3:
// filter 0 all ones sums eight taps, 8 (9d + 3h + w) + 4 (9 + 3 + 1) = 52 at
// the origin, +8 per step of w, +24 of h, +72 of d, bias 0.5; filter 1 is
// X3[d, h, w] - X3[d + 1, h + 1, w + 1] = -13, bias 1. G3: dilations
// (2, 1, 1) read depths 0 and 2, strides (1, 1, 2) keep w = 0: 4 (0 + 18) +
// 4 (3 + 1) + 8 (3h) = 88, 112. Y1: X1[c, w] = 5c + w (2 x 5), taps w and
// w + 2 (dilation 2) with weights (1, 2 | 3, -1), stride 2:
// w + 2 (w + 2) + 3 (5 + w) - (7 + w) = 5w + 12 at w = 0, 2.
// RUN: vram-run %S/Inputs/conv-1d-3d.onnxtext --print | FileCheck %s --check-prefix=ND
// RUN: vram-opt %S/Inputs/conv-1d-3d.onnxtext --emit=llvm | FileCheck %s --check-prefix=ND-LLVM
// ND: output 0 'Y3'
// ND-NEXT: {{\[\[\[\[\[}}52.5, 60.5]
// ND-NEXT: [76.5, 84.5]]
// ND-NEXT: {{\[\[}}124.5, 132.5]
// ND-NEXT: [148.5, 156.5]]]
// ND-NEXT: {{\[\[\[}}-12, -12]
// ND: output 1 'G3'
// ND-NEXT: {{\[\[\[\[\[}}88]
// ND-NEXT: [112]]]]]
// ND: output 2 'Y1'
// ND-NEXT: {{\[\[\[}}12, 22]]]
// Y3's bias goes into the kernel (`_bias`); G3 and Y1 have none.
// ND-LLVM: llvm.call @vram_conv3d_ncdhw_fcdhw_bias_f32(
// ND-LLVM: llvm.call @vram_conv3d_ncdhw_fcdhw_f32(
// ND-LLVM: llvm.call @vram_conv1d_ncw_fcw_f32(

// CHECK-LABEL: func.func @heavy
func.func @heavy(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>,
                 %t: memref<8x4xf32>, %bt: memref<16x8xf32>,
                 %x: memref<2x4x8xf32>, %y: memref<2x8x3xf32>, %z: memref<2x4x3xf32>,
                 %in: memref<1x3x9x9xf32>, %w: memref<5x3x3x3xf32>, %out: memref<1x5x3x3xf32>,
                 %gin: memref<1x2x1x5x5xf32>, %gw: memref<2x1x1x3x3xf32>, %gout: memref<1x2x1x3x3xf32>) {
  // CHECK: %[[A:.*]] = memref.cast %{{.*}} : memref<4x8xf32> to memref<?x?xf32>
  // CHECK: %[[NO:.*]] = arith.constant 0 : i64
  // CHECK: %[[NO2:.*]] = arith.constant 0 : i64
  // CHECK: call @vram_matmul_f32(%[[A]], %{{.*}}, %{{.*}}, %[[NO]], %[[NO2]]) : (memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, i64, i64) -> ()
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  // A transposed (stored K x M, a weight gradient's A^T dY), then B (N x K).
  // CHECK: %[[T:.*]] = memref.cast %{{.*}} : memref<8x4xf32> to memref<?x?xf32>
  // CHECK: %[[YES:.*]] = arith.constant 1 : i64
  // CHECK: %[[NO3:.*]] = arith.constant 0 : i64
  // CHECK: call @vram_matmul_f32(%[[T]], %{{.*}}, %{{.*}}, %[[YES]], %[[NO3]])
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%t, %b : memref<8x4xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  // CHECK: %[[NO4:.*]] = arith.constant 0 : i64
  // CHECK: %[[YES2:.*]] = arith.constant 1 : i64
  // CHECK: call @vram_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[NO4]], %[[YES2]])
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %bt : memref<4x8xf32>, memref<16x8xf32>) outs(%c : memref<4x16xf32>)
  // CHECK: call @vram_batch_matmul_f32
  linalg.batch_matmul ins(%x, %y : memref<2x4x8xf32>, memref<2x8x3xf32>) outs(%z : memref<2x4x3xf32>)
  // CHECK: %[[SH:.*]] = arith.constant 3 : i64
  // CHECK: %[[SW:.*]] = arith.constant 2 : i64
  // CHECK: %[[DH:.*]] = arith.constant 1 : i64
  // CHECK: %[[DW:.*]] = arith.constant 2 : i64
  // CHECK: call @vram_conv2d_nchw_fchw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[SH]], %[[SW]], %[[DH]], %[[DW]])
  linalg.conv_2d_nchw_fchw {strides = dense<[3, 2]> : tensor<2xi64>, dilations = dense<[1, 2]> : tensor<2xi64>}
    ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x3x3xf32>)
  // CHECK: call @vram_conv2d_ngchw_gfchw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?x?x?x?xf32>
  linalg.conv_2d_ngchw_gfchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%gin, %gw : memref<1x2x1x5x5xf32>, memref<2x1x1x3x3xf32>) outs(%gout : memref<1x2x1x3x3xf32>)
  // CHECK-NOT: linalg.
  return
}

// One stride and one dilation for a 1-d convolution, three each for a 3-d
// one (d, h, w).
// CHECK-LABEL: func.func @other_ranks
// CHECK: call @vram_conv1d_ncw_fcw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?x?xf32>, memref<?x?x?xf32>, memref<?x?x?xf32>, i64, i64) -> ()
// CHECK: %[[SD:.*]] = arith.constant 2 : i64
// CHECK: call @vram_conv3d_ncdhw_fcdhw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[SD]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x?x?x?x?xf32>
func.func @other_ranks(%in1: memref<1x2x9xf32>, %w1: memref<4x2x3xf32>, %out1: memref<1x4x7xf32>,
                       %in3: memref<1x2x5x5x5xf32>, %w3: memref<4x2x3x3x3xf32>, %out3: memref<1x4x2x3x3xf32>) {
  linalg.conv_1d_ncw_fcw {strides = dense<1> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>}
    ins(%in1, %w1 : memref<1x2x9xf32>, memref<4x2x3xf32>) outs(%out1 : memref<1x4x7xf32>)
  linalg.conv_3d_ncdhw_fcdhw {strides = dense<[2, 1, 1]> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
    ins(%in3, %w3 : memref<1x2x5x5x5xf32>, memref<4x2x3x3x3xf32>) outs(%out3 : memref<1x4x2x3x3xf32>)
  // CHECK-NOT: linalg.
  return
}

// A convolution whose IR leaves strides and dilations out passes their
// defaults, 1 each (reading the absent attributes crashed the pass).
// CHECK-LABEL: func.func @default_window
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @vram_conv2d_nchw_fchw_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @default_window(%in: memref<1x3x9x9xf32>, %w: memref<5x3x3x3xf32>, %out: memref<1x5x7x7xf32>) {
  linalg.conv_2d_nchw_fchw ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x7x7xf32>)
  return
}

// Other element types, strided views and maps other than transposes stay
// linalg ops.
// CHECK-LABEL: func.func @stays
func.func @stays(%a: memref<4x8xf16>, %b: memref<8x16xf16>, %c: memref<4x16xf16>,
                 %v: memref<4x8xf32, strided<[16, 1]>>, %d: memref<8x16xf32>, %e: memref<4x16xf32>,
                 %k: memref<8xf32>) {
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x8xf16>
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x16xf16>) outs(%c : memref<4x16xf16>)
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x8xf32, strided<[16, 1]>>
  linalg.matmul ins(%v, %d : memref<4x8xf32, strided<[16, 1]>>, memref<8x16xf32>) outs(%e : memref<4x16xf32>)
  // A broadcast along m (a rank-1 A read for every row) is no transpose.
  // CHECK: linalg.matmul indexing_maps
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%k, %d : memref<8xf32>, memref<8x16xf32>) outs(%e : memref<4x16xf32>)
  // CHECK-NOT: call
  return
}


// A per-feature bias broadcast into a convolution's output right before it
// (views and constants between are fine) becomes the kernel's `_bias`
// variant: the bias buffer follows the output, and the broadcast is gone.
// A grouped convolution's output is an expand_shape of the buffer the
// bias was broadcast into (groups x features = the buffer's dim 1).
// CHECK-LABEL: func.func @bias_first
// CHECK-NOT: linalg.broadcast
// CHECK: %[[B:.*]] = memref.cast %arg3 : memref<5xf32> to memref<?xf32>
// CHECK: call @vram_conv2d_nchw_fchw_bias_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.broadcast
// CHECK: %[[GB:.*]] = memref.cast %arg7 : memref<4xf32> to memref<?xf32>
// CHECK: call @vram_conv2d_ngchw_gfchw_bias_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[GB]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.
// CHECK: return
func.func @bias_first(%in: memref<1x3x9x9xf32>, %w: memref<5x3x3x3xf32>, %out: memref<1x5x7x7xf32>, %bias: memref<5xf32>,
                      %gin: memref<1x2x2x5x5xf32>, %gw: memref<2x2x2x3x3xf32>, %gout: memref<1x4x3x3xf32>, %gbias: memref<4xf32>) {
  linalg.broadcast ins(%bias : memref<5xf32>) outs(%out : memref<1x5x7x7xf32>) dimensions = [0, 2, 3]
  %c = arith.constant 0 : index
  linalg.conv_2d_nchw_fchw ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x7x7xf32>)
  linalg.broadcast ins(%gbias : memref<4xf32>) outs(%gout : memref<1x4x3x3xf32>) dimensions = [0, 2, 3]
  %grouped = memref.expand_shape %gout [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 3, 3] : memref<1x4x3x3xf32> into memref<1x2x2x3x3xf32>
  linalg.conv_2d_ngchw_gfchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
    ins(%gin, %gw : memref<1x2x2x5x5xf32>, memref<2x2x2x3x3xf32>) outs(%grouped : memref<1x2x2x3x3xf32>)
  return
}

// Left as they are: a broadcast along the features (not a bias per
// feature), one into another buffer, and one with a write to the output
// in between.
// CHECK-LABEL: func.func @not_a_bias
// CHECK: linalg.broadcast
// CHECK: call @vram_conv2d_nchw_fchw_f32(
// CHECK: linalg.broadcast
// CHECK: call @vram_conv2d_nchw_fchw_f32(
// CHECK: linalg.broadcast
// CHECK: linalg.fill
// CHECK: call @vram_conv2d_nchw_fchw_f32(
func.func @not_a_bias(%in: memref<1x3x9x9xf32>, %w: memref<5x3x3x3xf32>, %out: memref<1x5x7x7xf32>,
                      %row: memref<7xf32>, %bias: memref<5xf32>, %other: memref<1x5x7x7xf32>) {
  linalg.broadcast ins(%row : memref<7xf32>) outs(%out : memref<1x5x7x7xf32>) dimensions = [0, 1, 2]
  linalg.conv_2d_nchw_fchw ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x7x7xf32>)
  linalg.broadcast ins(%bias : memref<5xf32>) outs(%other : memref<1x5x7x7xf32>) dimensions = [0, 2, 3]
  linalg.conv_2d_nchw_fchw ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x7x7xf32>)
  linalg.broadcast ins(%bias : memref<5xf32>) outs(%out : memref<1x5x7x7xf32>) dimensions = [0, 2, 3]
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<1x5x7x7xf32>)
  linalg.conv_2d_nchw_fchw ins(%in, %w : memref<1x3x9x9xf32>, memref<5x3x3x3xf32>) outs(%out : memref<1x5x7x7xf32>)
  return
}
