// onnx.MatMul and onnx.Gemm executed on CPU, exact results.
// RUN: vram-run %s --print | FileCheck %s

func.func @main() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x2xf32>) {
  %a = onnx.Constant() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %b = onnx.Constant() {value = dense<[[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %mm = onnx.MatMul(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  // Gemm: alpha * A . B^T + beta * C, with B^T = %b.
  %bt = onnx.Constant() {value = dense<[[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %c = onnx.Constant() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gemm = onnx.Gemm(%a, %bt, %c) {alpha = 2.0 : f32, beta = 0.5 : f32, transB = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  // Batched: the 2-D %b broadcasts over the batch of two.
  %batch = onnx.Constant() {value = dense<[[[1.0, 1.0, 1.0]], [[0.0, -1.0, 0.5]]]> : tensor<2x1x3xf32>} : () -> tensor<2x1x3xf32>
  %bmm = onnx.MatMul(%batch, %b) : (tensor<2x1x3xf32>, tensor<3x2xf32>) -> tensor<2x1x2xf32>
  %cat = onnx.Concat(%bmm, %bmm) {axis = 1 : i64} : (tensor<2x1x2xf32>, tensor<2x1x2xf32>) -> tensor<2x2x2xf32>
  return %mm, %gemm, %cat : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x2xf32>
}

// a . b: [1 + 0 + 6, 0 + 2 - 3] = [7, -1]; [4 + 0 + 12, 0 + 5 - 6] = [16, -1]
// CHECK:      output 0 'result0': tensor<2x2xf32>
// CHECK-NEXT: {{^}}{{\[\[}}7, -1]
// CHECK-NEXT: {{^}} [16, -1]]
// 2 * (a . b) + 0.5 * [10, 20]: [14 + 5, -2 + 10] = [19, 8]; [32 + 5, -2 + 10] = [37, 8]
// CHECK:      output 1 'result1': tensor<2x2xf32>
// CHECK-NEXT: {{^}}{{\[\[}}19, 8]
// CHECK-NEXT: {{^}} [37, 8]]
// [1, 1, 1] . b = [1 + 0 + 2, 0 + 1 - 1] = [3, 0];
// [0, -1, 0.5] . b = [0 + 0 + 1, 0 - 1 - 0.5] = [1, -1.5]; each row twice
// CHECK:      output 2 'result2': tensor<2x2x2xf32>
// CHECK-NEXT: {{^}}{{\[\[\[}}3, 0]
// CHECK-NEXT: {{^}}  [3, 0]]
// CHECK-NEXT: {{^}} {{\[\[}}1, -1.5]
// CHECK-NEXT: {{^}}  [1, -1.5]]]
