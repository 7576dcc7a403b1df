// vram.update with master weights (precision=master-fp16): the rule runs on
// the f32 master copy and the f16 parameter is the result rounded, so
// updates smaller than the parameter's spacing are not lost.
// Numbers by hand: f16 values in [2048, 4096) are 2 apart.
// RUN: vram-run %s --print | FileCheck %s

// sgd, lr 0.5, g = 1, from p = master = 2048: master = 2047.5; p = 2047.5
// rounded to f16, a tie between 2047 and 2048 that goes to the even 2048.
// CHECK: output 0 'result0': tensor<1xf16>
// CHECK-NEXT: [2048]
// CHECK: output 1 'result1': tensor<1xf32>
// CHECK-NEXT: [2047.5]
// A second step from there: master = 2047, which f16 holds.
// CHECK: output 2 'result2': tensor<1xf16>
// CHECK-NEXT: [2047]
// CHECK: output 3 'result3': tensor<1xf32>
// CHECK-NEXT: [2047]
// Momentum (0.9, lr 0.5) with the velocity in f32: v = 0.9 x 2 + 1 = 2.8,
// master = 2048 - 1.4 = 2046.6 (f32: 2046.59998), p = f16(2046.6) = 2047.
// CHECK: output 4 'result4': tensor<1xf16>
// CHECK-NEXT: [2047]
// CHECK: output 5 'result5': tensor<1xf32>
// CHECK-NEXT: [2046.59998]
// CHECK: output 6 'result6': tensor<1xf32>
// CHECK-NEXT: [2.79999995]

func.func @main() -> (tensor<1xf16>, tensor<1xf32>, tensor<1xf16>,
                      tensor<1xf32>, tensor<1xf16>, tensor<1xf32>,
                      tensor<1xf32>) {
  %zero16 = onnx.Constant() {value = dense<0.0> : tensor<1xf16>} : () -> tensor<1xf16>
  %zero32 = onnx.Constant() {value = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %p0 = onnx.Constant() {value = dense<2048.0> : tensor<1xf16>} : () -> tensor<1xf16>
  %w0 = onnx.Constant() {value = dense<2048.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %v0 = onnx.Constant() {value = dense<2.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %g = onnx.Constant() {value = dense<1.0> : tensor<1xf16>} : () -> tensor<1xf16>
  // Fresh buffers for the updates to write (constants are read-only).
  %p = onnx.Add(%p0, %zero16) : (tensor<1xf16>, tensor<1xf16>) -> tensor<1xf16>
  %w = onnx.Add(%w0, %zero32) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %p1, %w1 = vram.update sgd %g into %p, %w {learning_rate = 0.5 : f64, master} : tensor<1xf16> -> tensor<1xf16>, tensor<1xf32>
  %p2, %w2 = vram.update sgd %g into %p1, %w1 {learning_rate = 0.5 : f64, master} : tensor<1xf16> -> tensor<1xf16>, tensor<1xf32>
  %q = onnx.Add(%p0, %zero16) : (tensor<1xf16>, tensor<1xf16>) -> tensor<1xf16>
  %x = onnx.Add(%w0, %zero32) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %v = onnx.Add(%v0, %zero32) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  %q1, %x1, %v1 = vram.update momentum %g into %q, %x, %v {learning_rate = 0.5 : f64, momentum = 0.9 : f64, master} : tensor<1xf16> -> tensor<1xf16>, tensor<1xf32>, tensor<1xf32>
  return %p1, %w1, %p2, %w2, %q1, %x1, %v1 : tensor<1xf16>, tensor<1xf32>, tensor<1xf16>, tensor<1xf32>, tensor<1xf16>, tensor<1xf32>, tensor<1xf32>
}
