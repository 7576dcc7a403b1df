// RUN: vram-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(vram-static-arena{print-stats}))" \
// RUN:   | FileCheck %s

// Program points count every op of the body but the terminator, after the
// pass removed the placed buffers' deallocs. Every 64xf32 buffer is 256 B,
// one slot at the default alignment of 256.
//
// A chain: a is written at op 2 and last read at op 4 (the copy into b);
// b is live [4, 6], c [6, 7]. a and c never meet, so the bound is two
// buffers, 512 B, and c reuses a's offset 0. Without reuse: 3 x 256 = 768.
//   ops: 0 cst, 1 alloc a, 2 fill a, 3 alloc b, 4 copy a->b, 5 alloc c,
//        6 copy b->c, 7 copy c->out
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[ARENA:.*]] = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
// CHECK-NEXT: arith.constant 1.0
// CHECK-NEXT: %[[OA:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.*]] = memref.view %[[ARENA]][%[[OA]]][] : memref<512xi8> to memref<64xf32>
// CHECK-NEXT: linalg.fill {{.*}} outs(%[[A]]
// CHECK-NEXT: %[[OB:.*]] = arith.constant 256 : index
// CHECK-NEXT: %[[B:.*]] = memref.view %[[ARENA]][%[[OB]]][] : memref<512xi8> to memref<64xf32>
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: %[[OC:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[C:.*]] = memref.view %[[ARENA]][%[[OC]]][] : memref<512xi8> to memref<64xf32>
// CHECK-NEXT: memref.copy %[[B]], %[[C]]
// CHECK-NEXT: memref.copy %[[C]], %arg0
// CHECK-NEXT: memref.dealloc %[[ARENA]] : memref<512xi8>
// CHECK-NEXT: return
// expected-remark @below {{arena 512 bytes for 3 buffers; max-live lower bound 512 bytes (ratio 1.000), 768 bytes without reuse}}
func.func @chain(%out: memref<64xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<64xf32>)
  %b = memref.alloc() : memref<64xf32>
  memref.copy %a, %b : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  %c = memref.alloc() : memref<64xf32>
  memref.copy %b, %c : memref<64xf32> to memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  memref.copy %c, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %c : memref<64xf32>
  return
}

// -----

// Allocs hoisted to the top and deallocs sunk to the bottom do not make
// buffers live there: a lives from its first use (op 3, fill) to its last
// (op 4), b from op 5 to op 6, so they share offset 0 and the arena is one
// buffer, 256 B (without reuse: 512).
//   ops: 0 cst, 1 alloc a, 2 alloc b, 3 fill a, 4 copy a->out,
//        5 fill b, 6 copy b->out
// CHECK-LABEL: func.func @hoisted
// CHECK: memref.alloc() {alignment = 256 : i64} : memref<256xi8>
// CHECK: arith.constant 0 : index
// CHECK: arith.constant 0 : index
// CHECK-NOT: memref.alloc
// CHECK: memref.dealloc
// CHECK-NOT: memref.dealloc
// CHECK: return
// expected-remark @below {{arena 256 bytes for 2 buffers; max-live lower bound 256 bytes (ratio 1.000), 512 bytes without reuse}}
func.func @hoisted(%out: memref<64xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<64xf32>)
  memref.copy %a, %out : memref<64xf32> to memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<64xf32>)
  memref.copy %b, %out : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  return
}

// -----

// A view keeps its source alive: %v (expand_shape of a) is read at op 7,
// after b's whole life [4, 6], so a [2, 7] and b overlap and cannot share:
// a at 0, b at 256, arena 512.
//   ops: 0 cst, 1 alloc a, 2 fill a, 3 expand_shape, 4 alloc b (first use
//        at 5), 5 fill b, 6 copy b->out, 7 copy v->out2
// CHECK-LABEL: func.func @view_extends_lifetime
// CHECK: memref.alloc() {alignment = 256 : i64} : memref<512xi8>
// CHECK: %[[OA:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[OA]]][] : memref<512xi8> to memref<64xf32>
// CHECK: %[[OB:.*]] = arith.constant 256 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[OB]]][] : memref<512xi8> to memref<64xf32>
// expected-remark @below {{arena 512 bytes for 2 buffers; max-live lower bound 512 bytes (ratio 1.000), 512 bytes without reuse}}
func.func @view_extends_lifetime(%out: memref<64xf32>, %out2: memref<8x8xf32>) {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<64xf32>)
  %v = memref.expand_shape %a [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %b = memref.alloc() : memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%b : memref<64xf32>)
  memref.copy %b, %out : memref<64xf32> to memref<64xf32>
  memref.copy %v, %out2 : memref<8x8xf32> to memref<8x8xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<64xf32>
  return
}

// -----

// A returned buffer belongs to the caller and stays an alloc; a (256 B)
// alone goes into the arena.
// CHECK-LABEL: func.func @returned
// CHECK: memref.alloc() {alignment = 256 : i64} : memref<256xi8>
// CHECK: %[[R:.*]] = memref.alloc() : memref<64xf32>
// CHECK: return %[[R]]
// expected-remark @below {{arena 256 bytes for 1 buffers; max-live lower bound 256 bytes (ratio 1.000), 256 bytes without reuse}}
func.func @returned() -> memref<64xf32> {
  %cst = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<64xf32>)
  %r = memref.alloc() : memref<64xf32>
  memref.copy %a, %r : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  return %r : memref<64xf32>
}

// -----

// An alloc's own larger alignment is kept, and the arena takes the largest.
// big: 300 B aligned to 1024 -> slot 1024; small: 10 x i1, a byte each
// (10 B) -> slot 256. Both live together: big at 0 (largest first), small
// on top at 1024; arena 1024 + 256 = 1280 = the bound.
// CHECK-LABEL: func.func @alignment
// CHECK: memref.alloc() {alignment = 1024 : i64} : memref<1280xi8>
// CHECK: %[[OB:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[OB]]][] : memref<1280xi8> to memref<300xi8>
// CHECK: %[[OS:.*]] = arith.constant 1024 : index
// CHECK-NEXT: memref.view %{{.*}}[%[[OS]]][] : memref<1280xi8> to memref<10xi1>
// expected-remark @below {{arena 1280 bytes for 2 buffers; max-live lower bound 1280 bytes (ratio 1.000), 1280 bytes without reuse}}
func.func @alignment(%o1: memref<300xi8>, %o2: memref<10xi1>) {
  %big = memref.alloc() {alignment = 1024 : i64} : memref<300xi8>
  %small = memref.alloc() : memref<10xi1>
  memref.copy %o1, %big : memref<300xi8> to memref<300xi8>
  memref.copy %o2, %small : memref<10xi1> to memref<10xi1>
  memref.copy %big, %o1 : memref<300xi8> to memref<300xi8>
  memref.copy %small, %o2 : memref<10xi1> to memref<10xi1>
  memref.dealloc %big : memref<300xi8>
  memref.dealloc %small : memref<10xi1>
  return
}

// -----

// One arena per memory space: views cannot cross spaces.
// CHECK-LABEL: func.func @memory_spaces
// CHECK-DAG: memref.alloc() {alignment = 256 : i64} : memref<256xi8>
// CHECK-DAG: memref.alloc() {alignment = 256 : i64} : memref<256xi8, 1>
// CHECK-DAG: memref.view {{.*}} : memref<256xi8, 1> to memref<64xf32, 1>
// CHECK-DAG: memref.view {{.*}} : memref<256xi8> to memref<64xf32>
// expected-remark @below {{arena 256 bytes for 1 buffers;}}
// expected-remark @below {{arena 256 bytes in memory space 1 : i64 for 1 buffers;}}
func.func @memory_spaces(%o: memref<64xf32>) {
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<64xf32, 1>
  memref.copy %o, %a : memref<64xf32> to memref<64xf32>
  memref.copy %a, %b : memref<64xf32> to memref<64xf32, 1>
  memref.copy %b, %o : memref<64xf32, 1> to memref<64xf32>
  return
}

// -----

// Dynamic shapes and non-identity layouts cannot be views of the arena and
// stay allocs; a function with nothing to place is left alone.
// CHECK-LABEL: func.func @nothing_to_place
// CHECK-NOT: memref.view
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
func.func @nothing_to_place(%n: index) {
  %a = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return
}
