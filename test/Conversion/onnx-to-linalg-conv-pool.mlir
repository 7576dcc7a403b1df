// Conv, ConvTranspose and pooling lowered to linalg on tensors. Output sizes
// follow out = floor((in + pads - d*(k-1) - 1) / s) + 1 (ceil with ceil_mode).
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// The lowered IR bufferizes: every op has a bufferization.
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// (8 + 1 + 1 - 3) / 2 + 1 = 4. The bias is the accumulator's initial value.
// CHECK-LABEL: func.func @conv_bias_strided
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<8x4x3x3xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
// CHECK: %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<8xf32>) outs(%{{.*}} : tensor<1x8x4x4xf32>) dimensions = [0, 2, 3]
// CHECK: %[[Y:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%[[P]], %[[W]] : tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%[[INIT]] : tensor<1x8x4x4xf32>)
// CHECK: return %[[Y]]
// BUF-LABEL: func.func @conv_bias_strided
// BUF-SAME: memref<1x4x8x8xf32
// BUF: linalg.conv_2d_nchw_fchw
// BUF-SAME: memref<1x8x4x4xf32>
func.func @conv_bias_strided(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x4x4xf32> {
  %y = onnx.Conv(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}

// -----

// Depthwise (group 4 = channels), dilation 2: extent 2*(3-1)+1 = 5,
// 8 - 5 + 1 = 4. No bias: the accumulator starts at 0.
// CHECK-LABEL: func.func @conv_depthwise_dilated
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[XG:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 4, 1, 8, 8]
// CHECK-DAG: %[[WG:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4]] output_shape [4, 1, 1, 3, 3]
// CHECK-DAG: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<1x4x4x4xf32>)
// CHECK-DAG: %[[IG:.*]] = tensor.expand_shape %[[FILL]] {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 4, 1, 4, 4]
// CHECK: %[[C:.*]] = linalg.conv_2d_ngchw_gfchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: ins(%[[XG]], %[[WG]] : tensor<1x4x1x8x8xf32>, tensor<4x1x1x3x3xf32>) outs(%[[IG]] : tensor<1x4x1x4x4xf32>)
// CHECK: tensor.collapse_shape %[[C]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x4x1x4x4xf32> into tensor<1x4x4x4xf32>
func.func @conv_depthwise_dilated(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %n = onnx.NoValue
  %y = onnx.Conv(%x, %w, %n) {group = 4 : i64, dilations = [2, 2]} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>, none) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// SAME pads: total = (5-1)*1 + 2 - 5 = 1, at the end for SAME_UPPER and at
// the beginning for SAME_LOWER; VALID pads nothing (5 - 2 + 1 = 4).
// CHECK-LABEL: func.func @conv_auto_pad
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: tensor.pad
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-SAME: ins(%arg0, %arg1 : tensor<1x1x5x5xf32>, tensor<1x1x2x2xf32>) outs(%{{.*}} : tensor<1x1x4x4xf32>)
func.func @conv_auto_pad(%x: tensor<1x1x5x5xf32>, %w: tensor<1x1x2x2xf32>) -> (tensor<1x1x5x5xf32>, tensor<1x1x5x5xf32>, tensor<1x1x4x4xf32>) {
  %n = onnx.NoValue
  %u = onnx.Conv(%x, %w, %n) {auto_pad = "SAME_UPPER"} : (tensor<1x1x5x5xf32>, tensor<1x1x2x2xf32>, none) -> tensor<1x1x5x5xf32>
  %l = onnx.Conv(%x, %w, %n) {auto_pad = "SAME_LOWER"} : (tensor<1x1x5x5xf32>, tensor<1x1x2x2xf32>, none) -> tensor<1x1x5x5xf32>
  %v = onnx.Conv(%x, %w, %n) {auto_pad = "VALID"} : (tensor<1x1x5x5xf32>, tensor<1x1x2x2xf32>, none) -> tensor<1x1x4x4xf32>
  return %u, %l, %v : tensor<1x1x5x5xf32>, tensor<1x1x5x5xf32>, tensor<1x1x4x4xf32>
}

// -----

// 1-d and 3-d convolutions use the matching named ops: 10 - 3 + 1 = 8 and
// 4 - 2 + 1 = 3; a grouped 1-d one is a linalg.generic over
// (n, g, f, o, c, k) reading the input at o + k.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 + d5)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @conv_1d_3d
// CHECK: linalg.conv_1d_ncw_fcw {{.*}} outs(%{{.*}} : tensor<1x3x8xf32>)
// CHECK: linalg.conv_3d_ncdhw_fcdhw {{.*}} outs(%{{.*}} : tensor<1x3x3x3x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[WT]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x2x2x10xf32>, tensor<2x2x2x3xf32>) outs(%{{.*}} : tensor<1x2x2x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @conv_1d_3d(%x1: tensor<1x2x10xf32>, %w1: tensor<3x2x3xf32>, %x3: tensor<1x2x4x4x4xf32>, %w3: tensor<3x2x2x2x2xf32>, %xg: tensor<1x4x10xf32>, %wg: tensor<4x2x3xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x3x3x3xf32>, tensor<1x4x8xf32>) {
  %n = onnx.NoValue
  %a = onnx.Conv(%x1, %w1, %n) : (tensor<1x2x10xf32>, tensor<3x2x3xf32>, none) -> tensor<1x3x8xf32>
  %b = onnx.Conv(%x3, %w3, %n) : (tensor<1x2x4x4x4xf32>, tensor<3x2x2x2x2xf32>, none) -> tensor<1x3x3x3x3xf32>
  %c = onnx.Conv(%xg, %wg, %n) {group = 2 : i64} : (tensor<1x4x10xf32>, tensor<4x2x3xf32>, none) -> tensor<1x4x8xf32>
  return %a, %b, %c : tensor<1x3x8xf32>, tensor<1x3x3x3x3xf32>, tensor<1x4x8xf32>
}

// -----

// ConvTranspose, stride 2, pads 1, output_padding 1: out = 2*(3-1) + 1 +
// (3-1) + 1 - 2 = 6. X spreads with stride 2 into zeros padded by
// (3-1) - 1 = 1 before and (3-1) - 1 + 1 = 2 after: 2*(3-1)+1 + 1 + 2 = 8;
// the stride-1 convolution with the flipped kernel gives 8 - 2 = 6.
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, -d3 + 2, -d4 + 2)>
// CHECK-LABEL: func.func @conv_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x3xf32>, %[[W:.*]]: tensor<2x4x3x3xf32>)
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<1x2x8x8xf32>
// CHECK: %[[S:.*]] = tensor.insert_slice %[[X]] into %[[Z]][0, 0, 1, 1] [1, 2, 3, 3] [1, 1, 2, 2]
// CHECK: %[[WG:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2], [3], [4]] output_shape [1, 2, 4, 3, 3]
// CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], #{{.*}}]
// CHECK-SAME: ins(%[[WG]] : tensor<1x2x4x3x3xf32>) outs(%{{.*}} : tensor<1x4x2x3x3xf32>)
// CHECK: %[[WF:.*]] = tensor.collapse_shape %[[F]] {{\[\[}}0, 1], [2], [3], [4]] : tensor<1x4x2x3x3xf32> into tensor<4x2x3x3xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: ins(%[[S]], %[[WF]] : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) outs(%{{.*}} : tensor<1x4x6x6xf32>)
func.func @conv_transpose(%x: tensor<1x2x3x3xf32>, %w: tensor<2x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %n = onnx.NoValue
  %y = onnx.ConvTranspose(%x, %w, %n) {strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]} : (tensor<1x2x3x3xf32>, tensor<2x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Grouped ConvTranspose with a bias and pads larger than the kernel's halo:
// out = (6-1) + (2-1) + 1 - 2 - 0 = 5. Padding before is (2-1) - 2 = -1, so
// the convolution (over 6 + 1 = 7 positions, giving 7 - 1 = 6) is cropped
// from offset 1.
// CHECK-LABEL: func.func @conv_transpose_grouped_crop
// CHECK: linalg.broadcast {{.*}} outs(%{{.*}} : tensor<1x2x6x6xf32>) dimensions = [0, 2, 3]
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} outs(%{{.*}} : tensor<1x2x1x6x6xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x6x6xf32> to tensor<1x2x5x5xf32>
func.func @conv_transpose_grouped_crop(%x: tensor<1x2x6x6xf32>, %w: tensor<2x1x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2x5x5xf32> {
  %y = onnx.ConvTranspose(%x, %w, %b) {group = 2 : i64, pads = [2, 2, 0, 0]} : (tensor<1x2x6x6xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
  return %y : tensor<1x2x5x5xf32>
}

// -----

// SAME_UPPER: out = 3 * 2 = 6 of a full 2*(3-1) + 3 = 7, pads 0 before and 1
// after; the spread input is padded by 2 - 0 = 2 and 2 - 1 = 1: 5 + 3 = 8.
// CHECK-LABEL: func.func @conv_transpose_same_upper
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 2, 2] [1, 1, 3, 3] [1, 1, 2, 2] : tensor<1x1x3x3xf32> into tensor<1x1x8x8xf32>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} outs(%{{.*}} : tensor<1x1x6x6xf32>)
// CHECK-NOT: tensor.extract_slice
func.func @conv_transpose_same_upper(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  %n = onnx.NoValue
  %y = onnx.ConvTranspose(%x, %w, %n) {auto_pad = "SAME_UPPER", strides = [2, 2]} : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, none) -> tensor<1x1x6x6xf32>
  return %y : tensor<1x1x6x6xf32>
}

// -----

// MaxPool, ceil_mode: ceil((8 + 2 - 3) / 2) + 1 = 5. The last window ends at
// 4*2 + 3 = 11 > 8 + 2, so one more -inf row/column goes at the end.
// CHECK-LABEL: func.func @max_pool_ceil
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 2, 2]
// CHECK: tensor.yield %[[NINF]]
// CHECK: tensor<1x3x8x8xf32> to tensor<1x3x11x11xf32>
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%[[P]], %[[WIN]] : tensor<1x3x11x11xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x3x5x5xf32>)
func.func @max_pool_ceil(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32> {
  %y, %i = onnx.MaxPool(%x) {ceil_mode = 1 : i64, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x5x5xf32>, none)
  return %y : tensor<1x3x5x5xf32>
}

// -----

// 1-d with dilation 2: 10 - (2*(3-1)+1) + 1 = 6. 3-d has no NCDHW named op:
// a linalg.generic, 4 / 2 = 2. Unsigned max needs maxui, the named ops
// compare signed; the padding and initial value is 0, the lowest ui8.
// CHECK-LABEL: func.func @max_pool_variants
// CHECK: linalg.pooling_ncw_max {dilations = dense<2> : tensor<1xi64>, strides = dense<1> : tensor<1xi64>}
// CHECK-SAME: outs(%{{.*}} : tensor<1x2x6xf32>)
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<1x1x2x2x2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK: linalg.fill ins(%[[ZERO]] : i8)
// CHECK: linalg.generic
// CHECK: arith.maxui
func.func @max_pool_variants(%x1: tensor<1x2x10xf32>, %x3: tensor<1x1x4x4x4xf32>, %xu: tensor<1x1x4x4xui8>) -> (tensor<1x2x6xf32>, tensor<1x1x2x2x2xf32>, tensor<1x1x2x2xui8>) {
  %a, %ai = onnx.MaxPool(%x1) {kernel_shape = [3], dilations = [2]} : (tensor<1x2x10xf32>) -> (tensor<1x2x6xf32>, none)
  %b, %bi = onnx.MaxPool(%x3) {kernel_shape = [2, 2, 2], strides = [2, 2, 2]} : (tensor<1x1x4x4x4xf32>) -> (tensor<1x1x2x2x2xf32>, none)
  %c, %ci = onnx.MaxPool(%xu) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x1x4x4xui8>) -> (tensor<1x1x2x2xui8>, none)
  return %a, %b, %c : tensor<1x2x6xf32>, tensor<1x1x2x2x2xf32>, tensor<1x1x2x2xui8>
}

// -----

// AveragePool 3x3, pads 1, count_include_pad = 0 on 4x4: (4 + 2 - 3) + 1 = 4
// windows per dim, starting at -1, 0, 1, 2, holding 2, 3, 3, 2 real elements.
// The divisor is their product per output position (both dims).
// CHECK-LABEL: func.func @average_pool_exclude_pad
// CHECK-COUNT-2: arith.constant dense<[2.000000e+00, 3.000000e+00, 3.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum {{.*}} outs(%{{.*}} : tensor<1x1x4x4xf32>)
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) outs(%[[SUM]] : tensor<1x1x4x4xf32>)
// CHECK: ^bb0(%[[H:.*]]: f32, %[[W:.*]]: f32, %[[S:.*]]: f32):
// CHECK: %[[M1:.*]] = arith.mulf %[[ONE]], %[[H]]
// CHECK: %[[M2:.*]] = arith.mulf %[[M1]], %[[W]]
// CHECK: arith.divf %[[S]], %[[M2]]
func.func @average_pool_exclude_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %y = onnx.AveragePool(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// count_include_pad = 1: every window counts its padding, 3 * 3 = 9.
// CHECK-LABEL: func.func @average_pool_include_pad
// CHECK: %[[SUM:.*]] = linalg.pooling_nchw_sum
// CHECK: %[[NINE:.*]] = arith.constant 9.000000e+00 : f32
// CHECK: linalg.generic {{.*}} outs(%[[SUM]] : tensor<1x1x4x4xf32>)
// CHECK: arith.divf %{{.*}}, %[[NINE]]
func.func @average_pool_include_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %y = onnx.AveragePool(%x) {count_include_pad = 1 : i64, kernel_shape = [3, 3], pads = [1, 1, 1, 1]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %y : tensor<1x1x4x4xf32>
}

// -----

// ceil_mode, 2x2 stride 2 on 5x5: ceil(3 / 2) + 1 = 3; the last window starts
// at 4 and holds 1 element: counts 2, 2, 1 per dim; one zero of padding.
// CHECK-LABEL: func.func @average_pool_ceil
// CHECK: arith.constant dense<[2.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK: linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
func.func @average_pool_ceil(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %y = onnx.AveragePool(%x) {ceil_mode = 1 : i64, count_include_pad = 1 : i64, kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  return %y : tensor<1x1x3x3xf32>
}

// -----

// GlobalAveragePool: one window over the whole image, 7 * 7 = 49 and 5.
// CHECK-LABEL: func.func @global_average_pool
// CHECK: %[[WIN:.*]] = tensor.empty() : tensor<7x7xf32>
// CHECK: linalg.pooling_nchw_sum {{.*}} ins(%arg0, %[[WIN]] : tensor<1x8x7x7xf32>, tensor<7x7xf32>) outs(%{{.*}} : tensor<1x8x1x1xf32>)
// CHECK: %[[N49:.*]] = arith.constant 4.900000e+01 : f32
// CHECK: arith.divf %{{.*}}, %[[N49]]
// CHECK: linalg.pooling_ncw_sum {{.*}} outs(%{{.*}} : tensor<2x3x1xf32>)
// CHECK: %[[N5:.*]] = arith.constant 5.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[N5]]
func.func @global_average_pool(%x: tensor<1x8x7x7xf32>, %x1: tensor<2x3x5xf32>) -> (tensor<1x8x1x1xf32>, tensor<2x3x1xf32>) {
  %y = onnx.GlobalAveragePool(%x) : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  %y1 = onnx.GlobalAveragePool(%x1) : (tensor<2x3x5xf32>) -> tensor<2x3x1xf32>
  return %y, %y1 : tensor<1x8x1x1xf32>, tensor<2x3x1xf32>
}
