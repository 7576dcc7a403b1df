// RUN: vram-opt %s --vram-outline-linalg-ops | FileCheck %s

// Each linalg op on buffers moves into a private function of its own that
// LLVM may not inline; the values it uses from above (%scale) become
// arguments, constants (%one) are cloned in. The op on tensors stays.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[S:.*]]: f32
// CHECK: call @step_generic_0(%[[A]], %[[B]], %[[S]]) : (memref<4xf32>, memref<4xf32>, f32) -> ()
// CHECK-NEXT: call @step_copy_1(%[[B]], %[[A]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.fill {{.*}} -> tensor<4xf32>
// CHECK-NEXT: return

// CHECK: func.func private @step_generic_0(%[[GA:.*]]: memref<4xf32>, %[[GB:.*]]: memref<4xf32>, %[[GS:.*]]: f32) attributes {no_inline, passthrough = ["noinline"]}
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.0
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[GA]] : memref<4xf32>) outs(%[[GB]] : memref<4xf32>)
// CHECK: arith.mulf %{{.*}}, %[[GS]]
// CHECK: arith.addf %{{.*}}, %[[ONE]]
// CHECK: func.func private @step_copy_1(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) attributes {no_inline, passthrough = ["noinline"]}
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: return

#id = affine_map<(d0) -> (d0)>
func.func @step(%a: memref<4xf32>, %b: memref<4xf32>, %scale: f32) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %r = arith.addf %m, %one : f32
    linalg.yield %r : f32
  }
  linalg.copy ins(%b : memref<4xf32>) outs(%a : memref<4xf32>)
  %e = tensor.empty() : tensor<4xf32>
  %t = linalg.fill ins(%one : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
