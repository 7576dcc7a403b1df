// onnx elementwise ops executed on CPU: vram-lower-to-cpu + JIT, exact
// results (every value below is exactly representable in f32).
// RUN: vram-run %s --print | FileCheck %s

func.func @main() -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xi64>) {
  %x = onnx.Constant() {value = dense<[[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %y = onnx.Constant() {value = dense<[0.5, 2.0, -1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  // y broadcasts over the rows (multidirectional broadcasting).
  %add = onnx.Add(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mul = onnx.Mul(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %relu = onnx.Relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %i = onnx.Constant() {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %ten = onnx.Constant() {value = dense<10> : tensor<i64>} : () -> tensor<i64>
  %isub = onnx.Sub(%i, %ten) : (tensor<2x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  return %add, %mul, %relu, %isub : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xi64>
}

// x + y: [1+0.5, -2+2, 3-1] = [1.5, 0, 2]; [-4+0.5, 5+2, -6-1] = [-3.5, 7, -7]
// CHECK:      output 0 'result0': tensor<2x3xf32>
// CHECK-NEXT: {{^}}{{\[\[}}1.5, 0, 2]
// CHECK-NEXT: {{^}} [-3.5, 7, -7]]
// x * y: [0.5, -4, -3]; [-2, 10, 6]
// CHECK:      output 1 'result1': tensor<2x3xf32>
// CHECK-NEXT: {{^}}{{\[\[}}0.5, -4, -3]
// CHECK-NEXT: {{^}} [-2, 10, 6]]
// relu(x)
// CHECK:      output 2 'result2': tensor<2x3xf32>
// CHECK-NEXT: {{^}}{{\[\[}}1, 0, 3]
// CHECK-NEXT: {{^}} [0, 5, 0]]
// i - 10, the scalar broadcast
// CHECK:      output 3 'result3': tensor<2x2xi64>
// CHECK-NEXT: {{^}}{{\[\[}}-9, -8]
// CHECK-NEXT: {{^}} [-7, -6]]
