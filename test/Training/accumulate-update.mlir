// vram.update with accumulate = 2, lowered and run: the accumulated sum a
// gets this micro-batch's gradient g; on the micro-batch that completes a
// step (step count divisible by 2) the rule runs with the mean and a is
// cleared, on the others nothing else changes. Numbers by hand:
// p = [10, 20], a = [1, 2], g = [3, 6]: a + g = [4, 8], mean [2, 4].
// RUN: vram-run %s --print | FileCheck %s

// Micro-batch 1 of 2 (sgd, lr 0.5): p kept, a = [4, 8].
// CHECK: output 0 'result0': tensor<2xf32>
// CHECK-NEXT: [10, 20]
// CHECK: output 1 'result1': tensor<2xf32>
// CHECK-NEXT: [4, 8]
// Micro-batch 2 of 2: p -= 0.5 x [2, 4] = [9, 18]; a cleared.
// CHECK: output 2 'result2': tensor<2xf32>
// CHECK-NEXT: [9, 18]
// CHECK: output 3 'result3': tensor<2xf32>
// CHECK-NEXT: [0, 0]
// Adam (lr 0.1), micro-batch 4 = step t = 2, moments from zero:
// m = 0.1 mean, v = 0.001 mean^2, so each element moves by
// lr (0.1 / (1 - 0.9^2)) / sqrt(0.001 / (1 - 0.999^2)) = 0.1 x 0.744137:
// p = [9.925586, 19.925586] (t = 4, the micro-batch count, would give
// 0.581128; t = 1, 1.0).
// CHECK: output 4 'result4': tensor<2xf32>
// CHECK-NEXT: [9.92558{{[0-9]*}}, 19.92558{{[0-9]*}}]
// CHECK: output 5 'result5': tensor<2xf32>
// CHECK-NEXT: [0, 0]

func.func @main() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
                      tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %zero = onnx.Constant() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %p0 = onnx.Constant() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a0 = onnx.Constant() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %g = onnx.Constant() {value = dense<[3.0, 6.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %one = onnx.Constant() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %two = onnx.Constant() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %four = onnx.Constant() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  // Fresh buffers for the updates to write (constants are read-only).
  %p = onnx.Add(%p0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %a = onnx.Add(%a0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %p1, %a1 = vram.update sgd %g step %one into %p, %a {learning_rate = 0.5 : f64, accumulate = 2 : i64} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>, tensor<2xf32>
  %q = onnx.Add(%p0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = onnx.Add(%a0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %q1, %b1 = vram.update sgd %g step %two into %q, %b {learning_rate = 0.5 : f64, accumulate = 2 : i64} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>, tensor<2xf32>
  %r = onnx.Add(%p0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %m = onnx.Add(%zero, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %v = onnx.Add(%zero, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %c = onnx.Add(%a0, %zero) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r1, %m1, %v1, %c1 = vram.update adam %g step %four into %r, %m, %v, %c {learning_rate = 0.1 : f64, accumulate = 2 : i64} : tensor<2xf32>, tensor<f32> -> tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return %p1, %a1, %q1, %b1, %r1, %c1 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
