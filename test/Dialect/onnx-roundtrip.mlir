// Printed onnx IR parses back to the same IR, in the custom and the generic
// form.
// RUN: vram-opt %s | vram-opt | FileCheck %s
// RUN: vram-opt %s --mlir-print-op-generic | vram-opt | FileCheck %s

// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x4x32x32xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x16x16xf32> {
  // CHECK: %[[NONE:.*]] = onnx.NoValue
  %n = onnx.NoValue
  // CHECK: onnx.Conv(%arg0, %arg1, %[[NONE]]) {group = 2 : i64, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x16x16xf32>
  %0 = onnx.Conv(%x, %w, %n) {group = 2 : i64, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x32x32xf32>, tensor<8x2x3x3xf32>, none) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// Optional results: one present, one none.
// CHECK-LABEL: func.func @maxpool
func.func @maxpool(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xi64> {
  // CHECK: onnx.MaxPool(%arg0) {ceil_mode = 1 : i64, kernel_shape = [3, 3], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)
  %0:2 = onnx.MaxPool(%x) {ceil_mode = 1 : i64, kernel_shape = [3, 3], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)
  // CHECK: onnx.BatchNormalization({{.*}}) {training_mode = 1 : i64} : {{.*}} -> (tensor<1x3x8x8xf32>, tensor<3xf32>, none)
  %s = onnx.Constant() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %1:3 = onnx.BatchNormalization(%x, %s, %s, %s, %s) {training_mode = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<1x3x8x8xf32>, tensor<3xf32>, none)
  return %0#1 : tensor<1x3x4x4xi64>
}

// Variadic results, optional operands, default-valued attributes elided.
// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x6xf32>, %lo: tensor<f32>) -> tensor<2x6xf32> {
  %n = onnx.NoValue
  // CHECK: onnx.Split(%arg0, %{{.*}}) {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  %0:3 = onnx.Split(%x, %n) {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
  // CHECK: onnx.Concat({{.*}}) {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  %1 = onnx.Concat(%0#0, %0#1, %0#2) {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  // CHECK: onnx.Clip(%{{.*}}, %arg1, %{{.*}}) : (tensor<2x6xf32>, tensor<f32>, none) -> tensor<2x6xf32>
  %2 = onnx.Clip(%1, %lo, %n) : (tensor<2x6xf32>, tensor<f32>, none) -> tensor<2x6xf32>
  // CHECK: onnx.Softmax(%{{.*}}) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %3 = onnx.Softmax(%2) {axis = -1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %3 : tensor<2x6xf32>
}

// A result type only compatible with the operand's (what ONNX shape
// inference leaves for com.microsoft Gelu) is accepted.
// CHECK-LABEL: func.func @refined
func.func @refined(%x: tensor<2x3xf32>) -> tensor<?x?xf32> {
  // CHECK: onnx.Gelu(%arg0) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<?x?xf32>
  %0 = onnx.Gelu(%x) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<?x?xf32>
  // CHECK: onnx.Relu(%{{.*}}) : (tensor<?x?xf32>) -> tensor<2x3xf32>
  %1 = onnx.Relu(%0) : (tensor<?x?xf32>) -> tensor<2x3xf32>
  return %0 : tensor<?x?xf32>
}

// Unknown operators, string constants.
// CHECK-LABEL: func.func @generic
func.func @generic(%x: tensor<3x4xf32>) -> tensor<3x2xi64> {
  // CHECK: onnx.Constant() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %k = onnx.Constant() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  // CHECK: onnx.Node "TopK"(%arg0, %{{.*}}) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %0:2 = onnx.Node "TopK"(%x, %k) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  // CHECK: onnx.Node "Widen"(%arg0) {domain = "com.example"} : (tensor<3x4xf32>) -> tensor<3x8xf32>
  %1 = onnx.Node "Widen"(%x) {domain = "com.example"} : (tensor<3x4xf32>) -> tensor<3x8xf32>
  // CHECK: onnx.Constant() {value = dense<["a", "b"]> : tensor<2x!onnx.string>} : () -> tensor<2x!onnx.string>
  %2 = onnx.Constant() {value = dense<["a", "b"]> : tensor<2x!onnx.string>} : () -> tensor<2x!onnx.string>
  return %0#1 : tensor<3x2xi64>
}
