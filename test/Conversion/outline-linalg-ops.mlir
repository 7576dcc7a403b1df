// RUN: vram-opt %s --vram-outline-linalg-ops | FileCheck %s

// Each linalg op on buffers moves into a private (LLVM: internal) function of its own that
// LLVM may not inline; the values it uses from above (%scale) become
// arguments, constants (%one) are cloned in. The op on tensors stays.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[A:.*]]: memref<4xf32>, %[[B:.*]]: memref<4xf32>, %[[S:.*]]: f32
// CHECK: call @step_generic_0(%[[A]], %[[B]], %[[S]]) : (memref<4xf32>, memref<4xf32>, f32) -> ()
// CHECK-NEXT: call @step_copy_1(%[[B]], %[[A]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.fill {{.*}} -> tensor<4xf32>
// CHECK-NEXT: return

// CHECK: func.func private @step_generic_0(%[[GA:.*]]: memref<4xf32>, %[[GB:.*]]: memref<4xf32>, %[[GS:.*]]: f32) attributes {llvm.linkage = #llvm.linkage<internal>, no_inline, passthrough = ["noinline"]}
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.0
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[GA]] : memref<4xf32>) outs(%[[GB]] : memref<4xf32>)
// CHECK: arith.mulf %{{.*}}, %[[GS]]
// CHECK: arith.addf %{{.*}}, %[[ONE]]
// CHECK: func.func private @step_copy_1(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, no_inline, passthrough = ["noinline"]}
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

// Loop nests that would make identical functions share one, whatever the
// buffers they are called on; one that differs in a type or a constant gets
// its own. Across functions too (@repeat's copy is @step's).
// CHECK-LABEL: func.func @repeat(
// CHECK-SAME: %[[RA:.*]]: memref<4xf32>, %[[RB:.*]]: memref<4xf32>, %[[RC:.*]]: memref<8xf32>
// CHECK: call @repeat_generic_0(%[[RA]], %[[RB]])
// CHECK-NEXT: call @repeat_generic_0(%[[RB]], %[[RA]])
// CHECK-NEXT: call @repeat_generic_2(%[[RA]], %[[RB]])
// CHECK-NEXT: call @repeat_generic_3(%[[RC]])
// CHECK-NEXT: call @step_copy_1(%[[RB]], %[[RA]])
// CHECK-NEXT: return
// CHECK-NOT: func.func private @repeat_generic_1
// CHECK-NOT: func.func private @repeat_copy_4
func.func @repeat(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<8xf32>) {
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %three : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<8xf32>) outs(%c : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %two : f32
    linalg.yield %r : f32
  }
  linalg.copy ins(%b : memref<4xf32>) outs(%a : memref<4xf32>)
  return
}

// Views at different static offsets into one buffer (slices of a
// concatenation) are passed at a dynamic offset, so the copies into each
// slice share one function.
// CHECK-LABEL: func.func @slices(
// CHECK-SAME: %[[X:[^:]*]]: memref<2x4xf32>, %[[CAT:[^:]*]]: memref<2x12xf32>
// CHECK: %[[FIRST:.*]] = memref.subview %[[CAT]][0, 0]
// CHECK: %[[SECOND:.*]] = memref.subview %[[CAT]][0, 4]
// CHECK: %[[F:.*]] = memref.cast %[[FIRST]] : memref<2x4xf32, strided<[12, 1]>> to memref<2x4xf32, strided<[12, 1], offset: ?>>
// CHECK-NEXT: call @slices_copy_0(%[[X]], %[[F]])
// CHECK-NEXT: %[[S:.*]] = memref.cast %[[SECOND]] : memref<2x4xf32, strided<[12, 1], offset: 4>> to memref<2x4xf32, strided<[12, 1], offset: ?>>
// CHECK-NEXT: call @slices_copy_0(%[[X]], %[[S]])
// CHECK-NOT: func.func private @slices_copy_1
// CHECK: func.func private @slices_copy_0(%{{.*}}: memref<2x4xf32>, %{{.*}}: memref<2x4xf32, strided<[12, 1], offset: ?>>)
func.func @slices(%x: memref<2x4xf32>, %cat: memref<2x12xf32>) {
  %first = memref.subview %cat[0, 0] [2, 4] [1, 1]
      : memref<2x12xf32> to memref<2x4xf32, strided<[12, 1]>>
  %second = memref.subview %cat[0, 4] [2, 4] [1, 1]
      : memref<2x12xf32> to memref<2x4xf32, strided<[12, 1], offset: 4>>
  linalg.copy ins(%x : memref<2x4xf32>) outs(%first : memref<2x4xf32, strided<[12, 1]>>)
  linalg.copy ins(%x : memref<2x4xf32>) outs(%second : memref<2x4xf32, strided<[12, 1], offset: 4>>)
  return
}
