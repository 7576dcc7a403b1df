// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" -o /dev/null

// Mean over axes [1, -1] = {1, 2} of 2x3x4 divides the sums by 3 * 4 = 12;
// keepdims=1 puts the unit dims back as a view.
// CHECK-LABEL: func.func @reduce_mean
// CHECK: %[[SUM:.+]] = linalg.reduce ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2xf32>) dimensions = [1, 2]
// CHECK: arith.addf
// CHECK: %[[MEAN:.+]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<2xf32>)
// CHECK: arith.constant 1.200000e+01 : f32
// CHECK: arith.divf
// CHECK: tensor.expand_shape %[[MEAN]] {{\[\[}}0, 1, 2]] output_shape [2, 1, 1] : tensor<2xf32> into tensor<2x1x1xf32>
func.func @reduce_mean(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %0 = onnx.ReduceMean(%x) {axes = [1, -1]} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  return %0 : tensor<2x1x1xf32>
}

// -----

// Integer mean truncates: 2x3 summed over axis 0, divided by 2 with divsi.
// CHECK-LABEL: func.func @reduce_mean_int
// CHECK: linalg.reduce
// CHECK: arith.addi
// CHECK: arith.divsi
// CHECK-NOT: expand_shape
func.func @reduce_mean_int(%x: tensor<2x3xi32>) -> tensor<3xi32> {
  %0 = onnx.ReduceMean(%x) {axes = [0], keepdims = 0 : i64} : (tensor<2x3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// ReduceSum-13 takes its axes as a constant input.
// CHECK-LABEL: func.func @reduce_sum
// CHECK: linalg.reduce ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2x4xf32>) dimensions = [1]
// CHECK-NOT: linalg.generic
// CHECK-NOT: expand_shape
func.func @reduce_sum(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %axes = onnx.Constant() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = onnx.ReduceSum(%x, %axes) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// No axes: all of them, kept as 1x1.
// CHECK-LABEL: func.func @reduce_sum_all
// CHECK: linalg.reduce ins(%arg0 : tensor<2x3xf32>) outs(%{{.+}} : tensor<f32>) dimensions = [0, 1]
// CHECK: tensor.expand_shape %{{.+}} [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
func.func @reduce_sum_all(%x: tensor<2x3xf32>) -> tensor<1x1xf32> {
  %none = onnx.NoValue
  %0 = onnx.ReduceSum(%x, %none) : (tensor<2x3xf32>, none) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// No axes with noop_with_empty_axes: the input itself.
// CHECK-LABEL: func.func @reduce_sum_noop
// CHECK-NEXT: return %arg0
func.func @reduce_sum_noop(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %none = onnx.NoValue
  %0 = onnx.ReduceSum(%x, %none) {noop_with_empty_axes = 1 : i64} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Axes computed at run time, keepdims=1: 2x3x4 -> 2x1x4 can only have
// reduced dimension 1 (a reduced size-1 dimension would be unchanged).
// CHECK-LABEL: func.func @reduce_sum_computed_axes
// CHECK: linalg.reduce ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2x4xf32>) dimensions = [1]
// CHECK: tensor.expand_shape
func.func @reduce_sum_computed_axes(%x: tensor<2x3x4xf32>, %axes: tensor<1xi64>) -> tensor<2x1x4xf32> {
  %0 = onnx.ReduceSum(%x, %axes) : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// keepdims=0: 2x3x4 -> 2x4 embeds in one way only (the 3 went).
// CHECK-LABEL: func.func @reduce_sum_computed_axes_dropped
// CHECK: linalg.reduce ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<2x4xf32>) dimensions = [1]
func.func @reduce_sum_computed_axes_dropped(%x: tensor<2x3x4xf32>, %axes: tensor<1xi64>) -> tensor<2x4xf32> {
  %0 = onnx.ReduceSum(%x, %axes) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Axes of static shape 0 are empty whatever their values: with
// noop_with_empty_axes, the input.
// CHECK-LABEL: func.func @reduce_sum_empty_axes
// CHECK-NEXT: return %arg0
func.func @reduce_sum_empty_axes(%x: tensor<2x3xf32>, %axes: tensor<0xi64>) -> tensor<2x3xf32> {
  %0 = onnx.ReduceSum(%x, %axes) {noop_with_empty_axes = 1 : i64} : (tensor<2x3xf32>, tensor<0xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
