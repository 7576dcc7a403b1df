// The vram-lower-to-cpu pipeline and vram-run on hand-written linalg on
// tensors (no onnx ops): it lowers to the LLVM dialect alone, and the JIT
// computes exact results.
// RUN: vram-opt %s --vram-lower-to-cpu | FileCheck %s --check-prefix=LLVM
// RUN: vram-run %s --print | FileCheck %s

// Only LLVM dialect ops remain, and @main takes its three results through
// one array of pointers (vram-pack-entry-arguments).
// LLVM-NOT: linalg.
// LLVM-NOT: memref.
// LLVM-NOT: bufferization.
// LLVM: llvm.func @main(%{{.*}}: !llvm.ptr)
// LLVM-NOT: @_mlir_ciface_main

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main() -> (tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xi64>) {
  %a = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = arith.constant dense<[[0.5, -1.0, 2.0], [1.0, 0.25, -3.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %sum = linalg.add ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>)
                    outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>

  // a (2x3) x b^T (3x2).
  %bt_init = tensor.empty() : tensor<3x2xf32>
  %bt = linalg.transpose ins(%b : tensor<2x3xf32>) outs(%bt_init : tensor<3x2xf32>)
                         permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %m_init = tensor.empty() : tensor<2x2xf32>
  %m_zero = linalg.fill ins(%zero : f32) outs(%m_init : tensor<2x2xf32>) -> tensor<2x2xf32>
  %prod = linalg.matmul ins(%a, %bt : tensor<2x3xf32>, tensor<3x2xf32>)
                        outs(%m_zero : tensor<2x2xf32>) -> tensor<2x2xf32>

  // Integers: x * x - 1, with a generic.
  %i = arith.constant dense<[[1, -2, 3], [40000000000, 5, -6]]> : tensor<2x3xi64>
  %ie = tensor.empty() : tensor<2x3xi64>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%i : tensor<2x3xi64>) outs(%ie : tensor<2x3xi64>) {
  ^bb0(%x: i64, %out: i64):
    %one = arith.constant 1 : i64
    %xx = arith.muli %x, %x : i64
    %r = arith.subi %xx, %one : i64
    linalg.yield %r : i64
  } -> tensor<2x3xi64>
  return %sum, %prod, %sq : tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xi64>
}

// a + b, elementwise.
// CHECK:      output 0 'result0': tensor<2x3xf32>
// CHECK-NEXT: {{^}}{{\[\[}}1.5, 1, 5]
// CHECK-NEXT: {{^}} [5, 5.25, 3]]
// a . b^T: [1*0.5 + 2*-1 + 3*2, 1*1 + 2*0.25 + 3*-3] = [4.5, -7.5]
//          [4*0.5 + 5*-1 + 6*2, 4*1 + 5*0.25 + 6*-3] = [9, -12.75]
// CHECK:      output 1 'result1': tensor<2x2xf32>
// CHECK-NEXT: {{^}}{{\[\[}}4.5, -7.5]
// CHECK-NEXT: {{^}} [9, -12.75]]
// x*x - 1; 40000000000^2 - 1 = 1600000000000000000000 - 1 wraps modulo 2^64:
// 1.6e21 mod 2^64 = 1600000000000000000000 - 86 * 18446744073709551616
// = 13580009660978561024, as i64 (- 2^64) -4866734412730990592, minus 1.
// CHECK:      output 2 'result2': tensor<2x3xi64>
// CHECK-NEXT: {{^}}{{\[\[}}0, 3, 8]
// CHECK-NEXT: {{^}} [-4866734412730990593, 24, 35]]
