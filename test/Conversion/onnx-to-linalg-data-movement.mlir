// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" -o /dev/null

// Unsigned constants keep their bits under the signless type: 255 = 0xff
// prints as the signless -1.
// CHECK-LABEL: func.func @constant_unsigned
// CHECK: arith.constant dense<[1, -1]> : tensor<2xi8>
func.func @constant_unsigned() -> tensor<2xui8> {
  %0 = onnx.Constant() {value = dense<[1, 255]> : tensor<2xui8>} : () -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// Shape is known statically; start = -2 keeps the last two dims.
// CHECK-LABEL: func.func @shape
// CHECK: %[[S:.+]] = arith.constant dense<[4, 5]> : tensor<2xi64>
// CHECK: return %[[S]]
func.func @shape(%x: tensor<3x4x5xf32>) -> tensor<2xi64> {
  %0 = onnx.Shape(%x) {start = -2 : i64} : (tensor<3x4x5xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// Reshape with 0 (copy dim 0 = 2) and -1 (the rest, 3x4 = 12): a collapse.
// CHECK-LABEL: func.func @reshape_zero_minus_one
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2]] : tensor<2x3x4xf32> into tensor<2x12xf32>
func.func @reshape_zero_minus_one(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %shape = onnx.Constant() {value = dense<[0, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = onnx.Reshape(%x, %shape) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

// 2x3 -> 3x2 regroups across dims: flatten to 6 then split, both views.
// CHECK-LABEL: func.func @reshape_regroup
// CHECK: %[[F:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
func.func @reshape_regroup(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %shape = onnx.Constant() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = onnx.Reshape(%x, %shape) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @flatten_unsqueeze_squeeze
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2, 3]] : tensor<2x3x4x5xf32> into tensor<6x20xf32>
// CHECK: tensor.expand_shape %arg1 {{\[\[}}0, 1], [2]] output_shape [1, 3, 4]
// CHECK: tensor.collapse_shape %arg2 {{\[\[}}0], [1, 2, 3]] : tensor<3x1x4x1xf32> into tensor<3x4xf32>
func.func @flatten_unsqueeze_squeeze(%x: tensor<2x3x4x5xf32>, %y: tensor<3x4xf32>, %z: tensor<3x1x4x1xf32>)
    -> (tensor<6x20xf32>, tensor<1x3x4xf32>, tensor<3x4xf32>) {
  %0 = onnx.Flatten(%x) {axis = 2 : i64} : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
  %axes = onnx.Constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %1 = onnx.Unsqueeze(%y, %axes) : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<1x3x4xf32>
  %none = onnx.NoValue
  %2 = onnx.Squeeze(%z, %none) : (tensor<3x1x4x1xf32>, none) -> tensor<3x4xf32>
  return %0, %1, %2 : tensor<6x20xf32>, tensor<1x3x4xf32>, tensor<3x4xf32>
}

// -----

// Identity disappears; Transpose without perm reverses the dims.
// CHECK-LABEL: func.func @identity_transpose
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x3x2xf32>
// CHECK: linalg.transpose ins(%arg0 : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x3x2xf32>) permutation = [2, 1, 0]
func.func @identity_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = onnx.Identity(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = onnx.Transpose(%0) : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK: tensor.concat dim(1) %arg0, %arg1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %0 = onnx.Concat(%a, %b) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Split 6 into [2, 4]: slices at offsets 0 and 2.
// CHECK-LABEL: func.func @split
// CHECK: tensor.extract_slice %arg0[0, 0] [2, 2] [1, 1] : tensor<2x6xf32> to tensor<2x2xf32>
// CHECK: tensor.extract_slice %arg0[0, 2] [2, 4] [1, 1] : tensor<2x6xf32> to tensor<2x4xf32>
func.func @split(%x: tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %split = onnx.Constant() {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0:2 = onnx.Split(%x, %split) {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2xi64>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// Axis 0: start 1, end 1000 clamps to 4 -> 3 rows. Axis 1: start -4 -> 2,
// end -1 -> 5 -> 3 columns.
// CHECK-LABEL: func.func @slice_clamped
// CHECK: tensor.extract_slice %arg0[1, 2] [3, 3] [1, 1] : tensor<4x6xf32> to tensor<3x3xf32>
func.func @slice_clamped(%x: tensor<4x6xf32>) -> tensor<3x3xf32> {
  %starts = onnx.Constant() {value = dense<[1, -4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %ends = onnx.Constant() {value = dense<[1000, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %none = onnx.NoValue
  %0 = onnx.Slice(%x, %starts, %ends, %none, %none) : (tensor<4x6xf32>, tensor<2xi64>, tensor<2xi64>, none, none) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Start 8, end 1, step -3 selects 8, 5, 2: the forward slice [2, 5, 8]
// (offset 2, stride 3), then reversed by reading index 2 - i.
// CHECK-DAG: #[[REV:.+]] = affine_map<(d0) -> (-d0 + 2)>
// CHECK-LABEL: func.func @slice_negative_step
// CHECK: %[[S:.+]] = tensor.extract_slice %arg0[2] [3] [3] : tensor<10xf32> to tensor<3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[REV]], #{{.+}}]
// CHECK-SAME: ins(%[[S]] : tensor<3xf32>)
func.func @slice_negative_step(%x: tensor<10xf32>) -> tensor<3xf32> {
  %starts = onnx.Constant() {value = dense<[8]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ends = onnx.Constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %axes = onnx.Constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %steps = onnx.Constant() {value = dense<[-3]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = onnx.Slice(%x, %starts, %ends, %axes, %steps) : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Gather on axis 1 (of 4): a negative index i reads i + 4; one still out
// of range is clamped into [0, 3] (it cannot read outside the row).
// CHECK-DAG: #[[IDX:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #{{.+}}]
// CHECK-SAME: ins(%arg1 : tensor<2xi64>)
// CHECK: %[[I:.+]] = arith.index_cast
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[I]], %c0
// CHECK: %[[WRAP:.+]] = arith.addi %[[I]], %c4
// CHECK: %[[SEL:.+]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK: %[[LOW:.+]] = arith.maxsi %[[SEL]], %c0
// CHECK: %[[CLAMPED:.+]] = arith.minsi %[[LOW]], %c3
// CHECK: %[[ROW:.+]] = linalg.index 0
// CHECK: tensor.extract %arg0[%[[ROW]], %[[CLAMPED]]] : tensor<3x4xf32>
func.func @gather(%x: tensor<3x4xf32>, %i: tensor<2xi64>) -> tensor<3x2xf32> {
  %0 = onnx.Gather(%x, %i) {axis = -1 : i64} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Expand reads the 3x1 input through a broadcasting map.
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @expand
// CHECK: linalg.generic {indexing_maps = [#[[B]], #{{.+}}]
// CHECK-SAME: outs(%{{.+}} : tensor<2x3x4xf32>)
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %shape = onnx.Constant() {value = dense<[2, 1, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
  %0 = onnx.Expand(%x, %shape) : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Constant pads [1, -1 | 0, 2]: dim 1 loses its first column (slice), then
// tensor.pad adds 1 row before and 2 columns after, filled with 0.
// CHECK-LABEL: func.func @pad_constant
// CHECK: %[[S:.+]] = tensor.extract_slice %arg0[0, 1] [2, 3] [1, 1] : tensor<2x4xf32> to tensor<2x3xf32>
// CHECK: tensor.pad %[[S]] low[1, 0] high[0, 2]
// CHECK: tensor.yield %{{.+}} : f32
// CHECK: } : tensor<2x3xf32> to tensor<3x5xf32>
func.func @pad_constant(%x: tensor<2x4xf32>) -> tensor<3x5xf32> {
  %pads = onnx.Constant() {value = dense<[1, -1, 0, 2]> : tensor<4xi64>} : () -> tensor<4xi64>
  %none = onnx.NoValue
  %0 = onnx.Pad(%x, %pads, %none) : (tensor<2x4xf32>, tensor<4xi64>, none) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Reflect [a b c] by (2, 1): c b a b c b. Output i reads i - 2, folded
// into [0, 4) (period 2 x (3 - 1)) and mirrored above 2: -2 -> 2, -1 -> 3
// -> 1, 0, 1, 2, 3 -> 1. Edge by (1, 2): a a b c c c, i - 1 clamped to
// [0, 2]. (Values: test_reflect_pad and test_edge_pad in the conformance
// run.)
// CHECK-LABEL: func.func @pad_reflect_edge
// CHECK: %[[TWO:.+]] = arith.constant 2 : i64
// CHECK: linalg.generic
// CHECK: arith.subi %{{.+}}, %[[TWO]]
// CHECK: %[[FOUR:.+]] = arith.constant 4 : i64
// CHECK: arith.remsi %{{.+}}, %[[FOUR]]
// CHECK: arith.remsi %{{.+}}, %[[FOUR]]
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: tensor.extract %arg0
// CHECK: linalg.generic
// CHECK-NOT: arith.remsi
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: tensor.extract %arg0
func.func @pad_reflect_edge(%x: tensor<3xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %none = onnx.NoValue
  %p0 = onnx.Constant() {value = dense<[2, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = onnx.Pad(%x, %p0, %none) {mode = "reflect"} : (tensor<3xf32>, tensor<2xi64>, none) -> tensor<6xf32>
  %p1 = onnx.Constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = onnx.Pad(%x, %p1, %none) {mode = "edge"} : (tensor<3xf32>, tensor<2xi64>, none) -> tensor<6xf32>
  return %0, %1 : tensor<6xf32>, tensor<6xf32>
}

// -----

// Nearest, half_pixel, scale 2 on H and W: output x maps to (x + 0.5) / 2 -
// 0.5 = -0.25, 0.25, 0.75, 1.25; round_prefer_floor gives 0, 0, 1, 1.
// N and C keep their indices (no table).
// CHECK-LABEL: func.func @resize_nearest
// CHECK: %[[H:.+]] = arith.constant dense<[0, 0, 1, 1]> : tensor<4xi64>
// CHECK: %[[W:.+]] = arith.constant dense<[0, 0, 1, 1]> : tensor<4xi64>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[H]], %[[W]] : tensor<4xi64>, tensor<4xi64>)
// CHECK-DAG: linalg.index 0
// CHECK-DAG: linalg.index 1
// CHECK: tensor.extract %arg0
func.func @resize_nearest(%x: tensor<1x3x2x2xf32>) -> tensor<1x3x4x4xf32> {
  %none = onnx.NoValue
  %scales = onnx.Constant() {value = dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = onnx.Resize(%x, %none, %scales, %none) : (tensor<1x3x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// Linear, half_pixel, 2 -> 4 on the last dim (given as sizes): coordinates
// -0.25, 0.25, 0.75, 1.25; neighbours clamp into [0, 1]; weights are the
// fractional parts 0.75, 0.25, 0.75, 0.25.
// CHECK-LABEL: func.func @resize_linear
// CHECK-DAG: arith.constant dense<[0, 0, 0, 1]> : tensor<4xi64>
// CHECK-DAG: arith.constant dense<[0, 1, 1, 1]> : tensor<4xi64>
// CHECK-DAG: arith.constant dense<[7.500000e-01, 2.500000e-01, 7.500000e-01, 2.500000e-01]> : tensor<4xf32>
// CHECK: linalg.generic
// CHECK-COUNT-2: tensor.extract %arg0
func.func @resize_linear(%x: tensor<2x2xf32>) -> tensor<2x4xf32> {
  %none = onnx.NoValue
  %sizes = onnx.Constant() {value = dense<[2, 4]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = onnx.Resize(%x, %none, %none, %sizes) {mode = "linear"} : (tensor<2x2xf32>, none, none, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Cubic (A = -0.75), half_pixel, 4 -> 2 on the last dim (scale 0.5):
// coordinates (0 + 0.5) / 0.5 - 0.5 = 0.5 and 2.5. Ratio 0.5 for both, so
// Keys' weights at distances 1.5, 0.5, 0.5, 1.5:
//   near(0.5) = ((A + 2) 0.5 - (A + 3)) 0.25 + 1 = (0.625 - 2.25) 0.25 + 1
//             = 0.59375
//   far(1.5)  = ((1.5 A - 5 A) 1.5 + 8 A) 1.5 - 4 A
//             = ((2.625) 1.5 - 6) 1.5 + 3 = -0.09375
// Taps -1, 0, 1, 2 (edge-clamped to 0, 0, 1, 2) and 1, 2, 3, 4 (1, 2, 3, 3).
// CHECK-LABEL: func.func @resize_cubic
// CHECK-DAG: arith.constant dense<[0, 1]> : tensor<2xi64>
// CHECK-DAG: arith.constant dense<[0, 2]> : tensor<2xi64>
// CHECK-DAG: arith.constant dense<[1, 3]> : tensor<2xi64>
// CHECK-DAG: arith.constant dense<[2, 3]> : tensor<2xi64>
// CHECK-DAG: arith.constant dense<-9.375000e-02> : tensor<2xf32>
// CHECK-DAG: arith.constant dense<5.937500e-01> : tensor<2xf32>
// CHECK: linalg.generic
// CHECK-COUNT-4: tensor.extract %arg0
func.func @resize_cubic(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
  %none = onnx.NoValue
  %sizes = onnx.Constant() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = onnx.Resize(%x, %none, %none, %sizes) {mode = "cubic"} : (tensor<1x4xf32>, none, none, tensor<2xi64>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// A `split` computed at run time must agree with the static result types,
// so they give the sizes: 2 and 4 rows.
// CHECK-LABEL: func.func @split_computed
// CHECK: tensor.extract_slice %arg0[0, 0] [2, 3] [1, 1]
// CHECK: tensor.extract_slice %arg0[2, 0] [4, 3] [1, 1]
func.func @split_computed(%x: tensor<6x3xf32>, %split: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %0:2 = onnx.Split(%x, %split) {axis = 0 : i64} : (tensor<6x3xf32>, tensor<2xi64>) -> (tensor<2x3xf32>, tensor<4x3xf32>)
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<4x3xf32>
}

// -----

// Starts and steps computed at run time: the result type fixes the sizes;
// each dimension's offset (the start, from the back if negative, clamped to
// [0, 6] forward or [0, 5] backward) and step are selected among the
// entries whose axis is that dimension, and a gather reads
// x[offset + i * step] (so negative steps need no reversal).
// CHECK-LABEL: func.func @slice_computed
// CHECK-DAG: tensor.extract %arg1[%{{.+}}] : tensor<1xi64>
// CHECK-DAG: tensor.extract %arg2[%{{.+}}] : tensor<1xi64>
// CHECK: arith.maxsi
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.muli
// CHECK: tensor.extract %arg0
func.func @slice_computed(%x: tensor<6x4xf32>, %starts: tensor<1xi64>, %steps: tensor<1xi64>) -> tensor<3x4xf32> {
  %ends = onnx.Constant() {value = dense<[6]> : tensor<1xi64>} : () -> tensor<1xi64>
  %axes = onnx.Constant() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = onnx.Slice(%x, %starts, %ends, %axes, %steps) : (tensor<6x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
