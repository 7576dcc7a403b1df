// Vector code on CPU (vram-vectorize-linalg-ops): a row of 100 elements
// runs as six vectors of 16 and one of 4, split off; a row of 5 as one
// vector; exp as upstream's polynomial, to float rounding of libm's.
// RUN: vram-run %s --print | FileCheck %s

func.func @main() -> (tensor<1x100xf32>, tensor<5xf32>) {
  %x = onnx.Constant() {value = dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0]]> : tensor<1x100xf32>} : () -> tensor<1x100xf32>
  %twice = onnx.Add(%x, %x) : (tensor<1x100xf32>, tensor<1x100xf32>) -> tensor<1x100xf32>
  %e = onnx.Constant() {value = dense<[0.0, 1.0, -1.0, 10.0, -200.0]> : tensor<5xf32>} : () -> tensor<5xf32>
  %exp = onnx.Exp(%e) : (tensor<5xf32>) -> tensor<5xf32>
  return %twice, %exp : tensor<1x100xf32>, tensor<5xf32>
}

// 2 x: the first vector, the last full one (elements 80-95) and the 4 split off.
// CHECK:      output 0 'result0': tensor<1x100xf32>
// CHECK-NEXT: {{^}}{{\[\[}}0, 2, 4, 6,
// CHECK-SAME: 190, 192, 194, 196, 198]]
// exp: 1, e, 1/e, e^10 = 22026.4658 and 0 (underflow) to 7 digits.
// CHECK:      output 1 'result1': tensor<5xf32>
// CHECK-NEXT: {{^}}[1, 2.718281{{[0-9]*}}, 0.367879{{[0-9]*}}, 22026.4{{[0-9]*}}, 0]
