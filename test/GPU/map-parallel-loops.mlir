// RUN: vram-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(vram-gpu-map-parallel-loops{block-size=256},convert-parallel-loops-to-gpu),canonicalize)' | FileCheck %s

// 2x3x200 = 1200 iterations, collapsed to one dimension and tiled by 256:
// ceil(1200 / 256) = 5 blocks of 256 threads, the last one guarded.
// CHECK-LABEL: func.func @collapse_and_tile
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C5]], {{.*}} = %[[C1]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C256]], {{.*}} = %[[C1]], {{.*}} = %[[C1]])
// CHECK: scf.if
// CHECK: memref.store
func.func @collapse_and_tile(%m: memref<2x3x200xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c200 = arith.constant 200 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c3, %c200) step (%c1, %c1, %c1) {
    memref.store %f, %m[%i, %j, %k] : memref<2x3x200xf32>
  }
  return
}

// -----

// 10 iterations get one block of 32 threads (10 rounded up to a warp), not
// 256.
// CHECK-LABEL: func.func @small_loop
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C1]], {{.*}} = %[[C1]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %[[C32]], {{.*}} = %[[C1]], {{.*}} = %[[C1]])
func.func @small_loop(%m: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c10) step (%c1) {
    memref.store %f, %m[%i] : memref<10xf32>
  }
  return
}

// -----

// A serial loop nest over device memory (a full reduction) runs in a kernel
// of one thread; the host keeps no memory access.
// CHECK-LABEL: func.func @serial_reduction
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK: scf.for
// CHECK: memref.load
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @serial_reduction(%in: memref<64xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %in[%i] : memref<64xf32>
    %acc = memref.load %out[] : memref<f32>
    %sum = arith.addf %acc, %x : f32
    memref.store %sum, %out[] : memref<f32>
  }
  return
}
