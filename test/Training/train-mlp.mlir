// Backward pass of small graphs: what each gradient reads and builds.
// RUN: vram-opt %s --split-input-file --pass-pipeline='builtin.module(vram-train{loss=mse optimizer=sgd lr=0.5})' | FileCheck %s

// y = Relu(x W + b): the MSE seed, Relu's mask from its output, the bias
// gradient summed over the batch, the weight gradient x^T dY. Backward reads
// y only for the mask, so forward computes the mask (1 byte an element)
// right after y and keeps it instead of y.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<4x3xf32> {onnx.name = "x"}, %[[W:.*]]: tensor<3x2xf32> {onnx.name = "W", vram.param = #vram.param<trainable>}, %[[B:.*]]: tensor<2xf32> {onnx.name = "b", vram.param = #vram.param<trainable>}, %[[T:.*]]: tensor<4x2xf32> {onnx.name = "labels"})
// Results: the loss, then the updated parameters under their own names.
// CHECK-SAME: -> (tensor<f32> {onnx.name = "loss"}, tensor<3x2xf32> {onnx.name = "W"}, tensor<2xf32> {onnx.name = "b"})
// CHECK: %[[MM:.*]] = onnx.MatMul(%[[X]], %[[W]])
// CHECK: %[[ADD:.*]] = onnx.Add(%[[MM]], %[[B]])
// CHECK: %[[Y:.*]] = onnx.Relu(%[[ADD]])
// CHECK-NEXT: onnx.Constant() {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[MASK:.*]] = onnx.Greater(%[[Y]], %{{.*}}) : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xi1>
// CHECK: %[[DIFF:.*]] = onnx.Sub(%[[Y]], %[[T]])
// CHECK: %[[LOSS:.*]] = onnx.ReduceMean({{.*}}) {axes = [0, 1], keepdims = 0 : i64}
// 2 / (4 x 2 elements) = 0.25
// CHECK: %[[QUARTER:.*]] = onnx.Constant() {value = dense<2.500000e-01> : tensor<f32>, vram.phase = #vram.phase<backward>}
// CHECK: %[[DY:.*]] = onnx.Mul(%[[DIFF]], %[[QUARTER]]) {vram.phase = #vram.phase<backward>}
// CHECK-NOT: onnx.Greater
// CHECK: %[[DADD:.*]] = onnx.Where(%[[MASK]], %[[DY]], %{{.*}}) {vram.phase = #vram.phase<backward>}
// CHECK: %[[DB:.*]] = onnx.ReduceSum(%[[DADD]], %{{.*}}) {vram.category = #vram.category<gradient>, vram.phase = #vram.phase<backward>} : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<1x2xf32>
// CHECK: %[[DBV:.*]] = onnx.Reshape(%[[DB]], %{{.*}}) {vram.category = #vram.category<gradient>, vram.phase = #vram.phase<backward>} : (tensor<1x2xf32>, tensor<1xi64>) -> tensor<2xf32>
// x^T dY is one Gemm that reads x transposed: no transposed copy of x.
// CHECK-NOT: onnx.Transpose
// CHECK: %[[DW:.*]] = onnx.Gemm(%[[X]], %[[DADD]], %{{.*}}) {transA = 1 : i64, vram.category = #vram.category<gradient>, vram.phase = #vram.phase<backward>} : (tensor<4x3xf32>, tensor<4x2xf32>, none) -> tensor<3x2xf32>
// The update writes W in place (one fused op, W's buffer).
// CHECK: %[[NEWW:.*]] = vram.update sgd %[[DW]] into %[[W]] {learning_rate = 5.000000e-01 : f64, vram.phase = #vram.phase<optimizer>} : tensor<3x2xf32> -> tensor<3x2xf32>
// CHECK: return %[[LOSS]], %[[NEWW]], %{{.*}} : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"},
                %w: tensor<3x2xf32> {onnx.name = "W", vram.param = #vram.param<trainable>},
                %b: tensor<2xf32> {onnx.name = "b", vram.param = #vram.param<trainable>})
    -> tensor<4x2xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = onnx.Add(%0, %b) : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2 = onnx.Relu(%1) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// A value read twice (a residual connection) sums its two gradients; the
// input x is not a parameter, so nothing is built for it.
// CHECK-LABEL: func.func @main
// CHECK: %[[H:.*]] = onnx.Mul(%arg0, %arg1)
// CHECK: %[[S:.*]] = onnx.Add(%[[H]], %[[H]])
// CHECK: %[[DY:.*]] = onnx.Mul(%{{.*}}, %{{.*}}) {vram.phase = #vram.phase<backward>}
// CHECK: %[[SUM:.*]] = onnx.Add(%[[DY]], %[[DY]]) {vram.phase = #vram.phase<backward>}
// Mul keeps only the factor its wanted gradient reads: x, for d/dw.
// CHECK: %[[DW:.*]] = onnx.Mul(%[[SUM]], %arg0) {vram.category = #vram.category<gradient>, vram.phase = #vram.phase<backward>}
// CHECK-NOT: onnx.Mul(%[[SUM]], %arg1)
func.func @main(%x: tensor<2xf32>,
                %w: tensor<2xf32> {vram.param = #vram.param<trainable>}) -> tensor<2xf32> {
  %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = onnx.Add(%0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// -----

// Training-mode BatchNormalization: the updated running statistics are
// results of the step, after the updated parameters, named after the state
// arguments they replace; the state gets no gradient.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {onnx.name = "loss"}, tensor<3xf32> {onnx.name = "bn.weight"}, tensor<3xf32> {onnx.name = "bn.bias"}, tensor<3xf32> {onnx.name = "bn.running_mean"}, tensor<3xf32> {onnx.name = "bn.running_var"})
// CHECK: %[[Y:.*]], %[[MEAN:.*]], %[[VAR:.*]] = onnx.BatchNormalization(%arg0, %arg1, %arg2, %arg3, %arg4) {training_mode = 1 : i64}
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[VAR]] :
func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"},
                %s: tensor<3xf32> {onnx.name = "bn.weight", vram.param = #vram.param<trainable>},
                %b: tensor<3xf32> {onnx.name = "bn.bias", vram.param = #vram.param<trainable>},
                %m: tensor<3xf32> {onnx.name = "bn.running_mean", vram.param = #vram.param<state>},
                %v: tensor<3xf32> {onnx.name = "bn.running_var", vram.param = #vram.param<state>})
    -> tensor<2x3xf32> {
  %y, %mean, %var = onnx.BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<2x3xf32>
}

// -----

// MaxPool keeps each maximum's offset in its window as int8 (k = kh KW + kw)
// instead of int64 flat indices: forward subtracts the window origins
// ((n C + c) H W + (oh sh - ph) W + ow sw - pw, a sum of broadcast
// constants) and folds the row, k = r - (r / W) (W - KW); backward rebuilds
// the indices and scatters as before.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]], %[[I:.*]] = onnx.MaxPool
// CHECK: onnx.Constant() {value = dense<{{\[\[\[\[}}0]]], {{\[\[}}[16]]]]> : tensor<2x1x1x1xi64>}
// CHECK: onnx.Sub(%[[I]], %{{.*}}) : (tensor<2x1x2x2xi64>, tensor<2x1x2x2xi64>) -> tensor<2x1x2x2xi64>
// CHECK: %[[K:.*]] = onnx.Cast(%{{.*}}) {to = 3 : i64} : (tensor<2x1x2x2xi64>) -> tensor<2x1x2x2xi8>
// CHECK: onnx.Cast(%[[K]]) {to = 7 : i64, vram.phase = #vram.phase<backward>} : (tensor<2x1x2x2xi8>) -> tensor<2x1x2x2xi64>
// CHECK: onnx.ScatterElements
func.func @main(%x: tensor<2x1x4x4xf32>,
                %w: tensor<2x1x4x4xf32> {vram.param = #vram.param<trainable>}) -> tensor<2x1x2x2xf32> {
  %0 = onnx.Mul(%x, %w) : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %y, %i = onnx.MaxPool(%0) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<2x1x4x4xf32>) -> (tensor<2x1x2x2xf32>, none)
  return %y : tensor<2x1x2x2xf32>
}

// -----

// Dilated along the last axis, the offset does not decode uniquely in
// general: the int64 indices are kept.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]], %[[I:.*]] = onnx.MaxPool
// CHECK-NOT: xi8>
// CHECK: onnx.Reshape(%[[I]], %{{.*}}) {vram.phase = #vram.phase<backward>} : (tensor<1x1x4x4xi64>, tensor<1xi64>) -> tensor<16xi64>
func.func @main(%x: tensor<1x1x5x6xf32>,
                %w: tensor<1x1x5x6xf32> {vram.param = #vram.param<trainable>}) -> tensor<1x1x4x4xf32> {
  %0 = onnx.Mul(%x, %w) : (tensor<1x1x5x6xf32>, tensor<1x1x5x6xf32>) -> tensor<1x1x5x6xf32>
  %y, %i = onnx.MaxPool(%0) {kernel_shape = [2, 2], dilations = [1, 2]} : (tensor<1x1x5x6xf32>) -> (tensor<1x1x4x4xf32>, none)
  return %y : tensor<1x1x4x4xf32>
}

// -----

// Linear layers on [batch, seq, features] (how transformer exports write
// them): both gradients are Gemms over the 2 x 5 = 10 rows flattened (the
// reshapes are views), with the transposes in the Gemm's flags. No MatMul
// in backward: a per-row product would be the weight's size times the 10
// rows, summed afterwards. The input x wants no gradient: no dY W1^T.
// CHECK-LABEL: func.func @main
// CHECK-NOT: onnx.MatMul{{.*}}backward
// CHECK: %[[W2:.*]] = onnx.Reshape(%arg2, %{{.*}}) {vram.phase = #vram.phase<backward>} : (tensor<1x4x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
// CHECK: %[[DY:.*]] = onnx.Reshape(%{{.*}}, %{{.*}}) {vram.phase = #vram.phase<backward>} : (tensor<2x5x2xf32>, tensor<2xi64>) -> tensor<10x2xf32>
// CHECK: %[[DH:.*]] = onnx.Gemm(%[[DY]], %[[W2]], %{{.*}}) {transB = 1 : i64, vram.phase = #vram.phase<backward>} : (tensor<10x2xf32>, tensor<4x2xf32>, none) -> tensor<10x4xf32>
// CHECK: %[[H:.*]] = onnx.Reshape(%0, %{{.*}}) {{.*}} -> tensor<10x4xf32>
// CHECK: %[[DW2:.*]] = onnx.Gemm(%[[H]], %[[DY]], %{{.*}}) {transA = 1 : i64, vram.category = #vram.category<gradient>, {{.*}}} : (tensor<10x4xf32>, tensor<10x2xf32>, none) -> tensor<4x2xf32>
// CHECK: onnx.Reshape(%[[DW2]], %{{.*}}) {{.*}} -> tensor<1x4x2xf32>
// CHECK: %[[X:.*]] = onnx.Reshape(%arg0, %{{.*}}) {{.*}} -> tensor<10x3xf32>
// CHECK: onnx.Gemm(%[[X]], %{{.*}}, %{{.*}}) {transA = 1 : i64, vram.category = #vram.category<gradient>, {{.*}}} : (tensor<10x3xf32>, tensor<10x4xf32>, none) -> tensor<3x4xf32>
// CHECK-NOT: onnx.MatMul
func.func @main(%x: tensor<2x5x3xf32>,
                %w1: tensor<3x4xf32> {vram.param = #vram.param<trainable>},
                %w2: tensor<1x4x2xf32> {vram.param = #vram.param<trainable>}) -> tensor<2x5x2xf32> {
  %0 = onnx.MatMul(%x, %w1) : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
  %1 = onnx.MatMul(%0, %w2) : (tensor<2x5x4xf32>, tensor<1x4x2xf32>) -> tensor<2x5x2xf32>
  return %1 : tensor<2x5x2xf32>
}
