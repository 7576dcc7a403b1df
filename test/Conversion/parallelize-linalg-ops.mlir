// RUN: vram-opt %s --split-input-file --vram-parallelize-linalg-ops | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-parallelize-linalg-ops="min-iterations=100000 min-chunks=4" | FileCheck %s --check-prefix=OPTIONS
// RUN: not vram-opt %s --split-input-file --vram-parallelize-linalg-ops="min-iterations=-5" 2>&1 | FileCheck %s --check-prefix=BAD-ITERATIONS
// RUN: not vram-opt %s --split-input-file --vram-parallelize-linalg-ops="min-chunks=0" 2>&1 | FileCheck %s --check-prefix=BAD-CHUNKS
// BAD-ITERATIONS: error: vram-parallelize-linalg-ops: min-iterations -5 and min-chunks 16: expected min-iterations >= 0 and min-chunks >= 1
// BAD-CHUNKS: error: vram-parallelize-linalg-ops: min-iterations 65536 and min-chunks 0: expected min-iterations >= 0 and min-chunks >= 1

// An activation of 8 images of 64 channels (8 x 64 x 56 x 56 = 1,605,632
// iterations): split along the images and channels, the fewest leading
// loops with 16 chunks or more (8 are not; 8 x 64 = 512 are), into one
// OpenMP loop over the two, collapsed; each chunk is the op on one
// channel of one image (a 56 x 56 slice). With min-chunks=4 the images
// alone are enough.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @activation(
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: omp.parallel {
// CHECK-NEXT: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%[[N:.*]], %[[C:.*]]) : index = (%{{.*}}, %{{.*}}) to (%[[C8]], %[[C64]]) step (%{{.*}}, %{{.*}}) collapse(2) {
// CHECK: memref.subview %{{.*}}[%[[N]], %[[C]], 0, 0] [1, 1, 56, 56] [1, 1, 1, 1]
// CHECK: linalg.generic
// CHECK-SAME: memref<1x1x56x56xf32, strided<[200704, 3136, 56, 1], offset: ?>>
// CHECK: omp.yield
// CHECK: omp.terminator
// OPTIONS-LABEL: func.func @activation(
// OPTIONS: omp.loop_nest (%{{.*}}) : index = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// OPTIONS: memref.subview %{{.*}}[%{{.*}}, 0, 0, 0] [1, 64, 56, 56] [1, 1, 1, 1]
func.func @activation(%x: memref<8x64x56x56xf32>, %y: memref<8x64x56x56xf32>) {
  linalg.generic {indexing_maps = [#map, #map],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<8x64x56x56xf32>) outs(%y : memref<8x64x56x56xf32>) {
  ^bb0(%a: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A max pool's window (2 x oh + kh) grows with the loops that index it:
// split, each chunk reading its channel's rows (200,704 iterations: split
// under both sets of options).
#in = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
#window = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @max_pool(
// CHECK: omp.loop_nest {{.*}} collapse(2)
// CHECK: memref.subview %{{.*}}[%{{.*}}, %{{.*}}, 0, 0] [1, 1, 113, 113] [1, 1, 1, 1]
// CHECK: linalg.generic
// OPTIONS-LABEL: func.func @max_pool(
// OPTIONS: omp.loop_nest {{.*}} collapse(2)
func.func @max_pool(%x: memref<1x64x114x114xf32>, %w: memref<3x3xf32>,
                    %y: memref<1x64x56x56xf32>) {
  linalg.generic {indexing_maps = [#in, #window, #out],
                  iterator_types = ["parallel", "parallel", "parallel",
                                    "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<1x64x114x114xf32>, memref<3x3xf32>)
      outs(%y : memref<1x64x56x56xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.maximumf %a, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left serial: a nest below 65,536 iterations (and below 100,000),
// one whose leading loop is a reduction, one that reads a flipped filter
// (2 - kh decreases as kh grows; a chunk's slice would run backwards), one
// of dynamic shape, and one with a single row (the innermost loop is never
// split, so it has no other loop to split along).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#flip = affine_map<(d0, d1, d2) -> (d0, -d1 + 2, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @serial(
// CHECK-NOT: omp.
// CHECK: return
// OPTIONS-LABEL: func.func @serial(
// OPTIONS-NOT: omp.
// OPTIONS: return
func.func @serial(%small: memref<255x256xf32>, %rows: memref<512x1024xf32>,
                  %sums: memref<1024xf32>, %filter: memref<64x3x1024xf32>,
                  %flipped: memref<64x3x1024xf32>, %dynamic: memref<?x?xf32>,
                  %row: memref<1x131072xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2],
                  iterator_types = ["parallel", "parallel"]}
      ins(%small : memref<255x256xf32>) outs(%small : memref<255x256xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id2, #col],
                  iterator_types = ["reduction", "parallel"]}
      ins(%rows : memref<512x1024xf32>) outs(%sums : memref<1024xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %a, %out : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#flip, #id3],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%filter : memref<64x3x1024xf32>)
      outs(%flipped : memref<64x3x1024xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2],
                  iterator_types = ["parallel", "parallel"]}
      ins(%dynamic : memref<?x?xf32>) outs(%dynamic : memref<?x?xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2],
                  iterator_types = ["parallel", "parallel"]}
      ins(%row : memref<1x131072xf32>) outs(%row : memref<1x131072xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  return
}
