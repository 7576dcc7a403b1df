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

// -----

// Straight-line code on device memory (a rank-0 linalg op after
// linalg-to-loops: load, compute, store) runs in one one-thread kernel,
// arithmetic included; the view between the accesses stays on the host.
// CHECK-LABEL: func.func @straight_line_scalar
// CHECK: memref.view
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.divf
// CHECK-NEXT: memref.store
// CHECK-NEXT: memref.store
// CHECK-NEXT: gpu.terminator
// CHECK-NOT: gpu.launch
func.func @straight_line_scalar(%arena: memref<8xi8>, %sum: memref<f32>) {
  %c4 = arith.constant 4 : index
  %n = arith.constant 20.0 : f32
  %s = memref.load %sum[] : memref<f32>
  %copy = memref.view %arena[%c4][] : memref<8xi8> to memref<f32>
  %mean = arith.divf %s, %n : f32
  memref.store %mean, %sum[] : memref<f32>
  memref.store %mean, %copy[] : memref<f32>
  return
}

// -----

// A scatter-add (for i: out[idx[i]] += upd[i]) over buffers the arena keeps
// apart becomes a parallel loop of atomic adds: 1000 iterations in
// ceil(1000 / 256) = 4 blocks of 256 threads, the last one guarded.
// CHECK-LABEL: func.func @scatter_add
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C4]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C256]], {{.*}})
// CHECK: scf.if
// CHECK: %[[UPD:.*]] = memref.load %{{.*}} : memref<1000xf32>
// CHECK: memref.atomic_rmw addf %[[UPD]], %{{.*}} : (f32, memref<4096xf32>) -> f32
// CHECK-NOT: memref.store
func.func @scatter_add() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %c16384 = arith.constant 16384 : index
  %c28384 = arith.constant 28384 : index
  %arena = gpu.alloc () : memref<32384xi8>
  // Bytes [0, 16384), [16384, 24384), [28384, 32384): disjoint.
  %out = memref.view %arena[%c0][] : memref<32384xi8> to memref<4096xf32>
  %idx2d = memref.view %arena[%c16384][] : memref<32384xi8> to memref<10x100xi64>
  %idx = memref.collapse_shape %idx2d [[0, 1]] : memref<10x100xi64> into memref<1000xi64>
  %upd = memref.view %arena[%c28384][] : memref<32384xi8> to memref<1000xf32>
  scf.for %i = %c0 to %c1000 step %c1 {
    %j64 = memref.load %idx[%i] : memref<1000xi64>
    %j = arith.index_cast %j64 : i64 to index
    %u = memref.load %upd[%i] : memref<1000xf32>
    %old = memref.load %out[%j] : memref<4096xf32>
    %new = arith.addf %old, %u : f32
    memref.store %new, %out[%j] : memref<4096xf32>
  }
  return
}

// -----

// The same loop reading bytes it also writes (the update overlaps the
// output, [0, 16384) and [12384, 16384)) keeps its order: one thread.
// CHECK-LABEL: func.func @scatter_add_overlapping
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK: scf.for
// CHECK-NOT: memref.atomic_rmw
// CHECK: memref.store
func.func @scatter_add_overlapping() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %c12384 = arith.constant 12384 : index
  %idx = gpu.alloc () : memref<1000xi64>
  %arena = gpu.alloc () : memref<16384xi8>
  %out = memref.view %arena[%c0][] : memref<16384xi8> to memref<4096xf32>
  %upd = memref.view %arena[%c12384][] : memref<16384xi8> to memref<1000xf32>
  scf.for %i = %c0 to %c1000 step %c1 {
    %j64 = memref.load %idx[%i] : memref<1000xi64>
    %j = arith.index_cast %j64 : i64 to index
    %u = memref.load %upd[%i] : memref<1000xf32>
    %old = memref.load %out[%j] : memref<4096xf32>
    %new = arith.addf %old, %u : f32
    memref.store %new, %out[%j] : memref<4096xf32>
  }
  return
}

// -----

// A reduction over the outer dimension (bias gradient: out[j] += in[i][j])
// is a serial loop around a parallel one. It runs in one thread, the inner
// loop turned into an scf.for, so nothing is left for the host.
// CHECK-LABEL: func.func @outer_reduction
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @outer_reduction(%in: memref<2x10xf32>, %out: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c10 = arith.constant 10 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.parallel (%j) = (%c0) to (%c10) step (%c1) {
      %x = memref.load %in[%i, %j] : memref<2x10xf32>
      %acc = memref.load %out[%j] : memref<10xf32>
      %sum = arith.addf %acc, %x : f32
      memref.store %sum, %out[%j] : memref<10xf32>
    }
  }
  return
}
