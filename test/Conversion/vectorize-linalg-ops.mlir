// RUN: vram-opt %s --split-input-file --vram-vectorize-linalg-ops | FileCheck %s

// A short row (20 elements, at most four vectors of 16) is one vector per
// row; exp becomes its polynomial (no math.exp left); the bias, indexed by
// an outer loop only, is loaded once per row and broadcast.
#row = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#channel = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @short_rows(
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c20 step %c20
// CHECK: vector.load {{.*}} vector<20xf32>
// CHECK: %[[B:.*]] = vector.load {{.*}} vector<f32>
// CHECK-NOT: math.exp
// CHECK: vector.broadcast %[[B]] : vector<f32> to vector<20xf32>
// CHECK: vector.store {{.*}} vector<20xf32>
func.func @short_rows(%x: memref<2x3x20xf32>, %bias: memref<3xf32>,
                      %y: memref<2x3x20xf32>) {
  linalg.generic {indexing_maps = [#row, #channel, #row],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %bias : memref<2x3x20xf32>, memref<3xf32>)
      outs(%y : memref<2x3x20xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %e = math.exp %a : f32
    %s = arith.addf %e, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A long row (100 elements) in vectors of 16 up to 96, and the last 4 as
// an op of their own with one vector of 4.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @long_row(
// CHECK: scf.for %{{.*}} = %c0 to %c96 step %c16
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}} vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: vector.store {{.*}} vector<4xf32>
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @long_row(%x: memref<100xf32>, %y: memref<100xf32>) {
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : memref<100xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left to convert-linalg-to-loops: a reduction, a transpose (the inner
// loop strides through the input), i1 elements (vectors of i1 are bits in
// LLVM, bytes in a memref) and a dynamic shape.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row_sum = affine_map<(d0, d1) -> (d0)>
#transposed = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: vector.
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: vector.
func.func @left_alone(%x: memref<4x8xf32>, %sum: memref<4xf32>,
                      %t: memref<8x4xf32>, %mask: memref<4x8xi1>,
                      %d: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#id, #row_sum],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#transposed, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<8x4xf32>) outs(%x : memref<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%mask : memref<4x8xi1>) {
  ^bb0(%a: f32, %out: i1):
    %zero = arith.constant 0.0 : f32
    %m = arith.cmpf olt, %a, %zero : f32
    linalg.yield %m : i1
  }
  linalg.generic {indexing_maps = [#id, #id],
                  iterator_types = ["parallel", "parallel"]}
      ins(%d : memref<?x8xf32>) outs(%d : memref<?x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}
