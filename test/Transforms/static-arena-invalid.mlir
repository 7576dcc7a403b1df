// RUN: vram-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline="builtin.module(func.func(vram-static-arena))"

// Lifetimes are positions in the op order of one block.
// expected-error @below {{vram-static-arena needs a single-block function body}}
func.func @multi_block(%c: i1) {
  %a = memref.alloc() : memref<64xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  memref.dealloc %a : memref<64xf32>
  return
^bb2:
  memref.dealloc %a : memref<64xf32>
  return
}

// -----

// The analysis needs every buffer's size, a dynamic one included.
func.func @dynamic(%n: index, %o: memref<64xf32>) {
  %a = memref.alloc() : memref<64xf32>
  // expected-error @below {{vram-static-arena needs every buffer's size}}
  %b = memref.alloc(%n) : memref<?xf32>
  memref.copy %o, %a : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<?xf32>
  return
}

// -----

// 2^61 elements of 8 bytes are 2^64 bytes.
func.func @overflow() {
  // expected-error @below {{size in bytes overflows 64 bits}}
  %a = memref.alloc() : memref<2305843009213693952xf64>
  memref.dealloc %a : memref<2305843009213693952xf64>
  return
}
