// RUN: vram-opt %s --vram-copies-to-linalg | FileCheck %s

// A copy into a slice of a concatenation (not one contiguous block) and
// one out of a padded buffer's interior become linalg.copy; a copy of one
// contiguous block (memcpy) and a dynamically shaped one stay.
// CHECK-LABEL: func.func @copies(
// CHECK-SAME: %[[A:[^:]*]]: memref<2x3x4xf32>, %[[CAT:[^:]*]]: memref<2x5x4xf32>, %[[PAD:[^:]*]]: memref<2x3x6xf32>, %[[B:[^:]*]]: memref<2x3x4xf32>, %[[D:[^:]*]]: memref<?xf32>, %[[E:[^:]*]]: memref<?xf32>
// CHECK: %[[SLICE:.*]] = memref.subview %[[CAT]][0, 2, 0]
// CHECK: linalg.copy ins(%[[A]] : memref<2x3x4xf32>) outs(%[[SLICE]] : memref<2x3x4xf32, strided<[20, 4, 1], offset: 8>>)
// CHECK: %[[INNER:.*]] = memref.subview %[[PAD]][0, 0, 1]
// CHECK: linalg.copy ins(%[[INNER]] : memref<2x3x4xf32, strided<[18, 6, 1], offset: 1>>) outs(%[[B]] : memref<2x3x4xf32>)
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: memref.copy %[[D]], %[[E]]
// CHECK-NOT: linalg.copy
func.func @copies(%a: memref<2x3x4xf32>, %cat: memref<2x5x4xf32>,
                  %pad: memref<2x3x6xf32>, %b: memref<2x3x4xf32>,
                  %d: memref<?xf32>, %e: memref<?xf32>) {
  %slice = memref.subview %cat[0, 2, 0] [2, 3, 4] [1, 1, 1]
      : memref<2x5x4xf32> to memref<2x3x4xf32, strided<[20, 4, 1], offset: 8>>
  memref.copy %a, %slice
      : memref<2x3x4xf32> to memref<2x3x4xf32, strided<[20, 4, 1], offset: 8>>
  %inner = memref.subview %pad[0, 0, 1] [2, 3, 4] [1, 1, 1]
      : memref<2x3x6xf32> to memref<2x3x4xf32, strided<[18, 6, 1], offset: 1>>
  memref.copy %inner, %b
      : memref<2x3x4xf32, strided<[18, 6, 1], offset: 1>> to memref<2x3x4xf32>
  memref.copy %a, %b : memref<2x3x4xf32> to memref<2x3x4xf32>
  memref.copy %d, %e : memref<?xf32> to memref<?xf32>
  return
}
