// RUN: vram-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(vram-gpu-device-memory))' | FileCheck %s

// An argument read only is copied in, never back; the result is copied out
// to a fresh host buffer; both device buffers are freed after that copy.
// CHECK-LABEL: func.func @read_only_argument
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK: %[[DX:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[DX]], %[[X]]
// CHECK: %[[Y:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: linalg.copy ins(%[[DX]] : memref<4xf32>) outs(%[[Y]] : memref<4xf32>)
// CHECK: %[[H:.*]] = memref.alloc() : memref<4xf32>
// CHECK: gpu.memcpy %[[H]], %[[Y]]
// CHECK-NOT: gpu.memcpy %[[X]]
// CHECK-DAG: gpu.dealloc %[[DX]] :
// CHECK-DAG: gpu.dealloc %[[Y]] :
// CHECK: return %[[H]]
func.func @read_only_argument(%x: memref<4xf32>) -> memref<4xf32> {
  %y = memref.alloc() : memref<4xf32>
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return %y : memref<4xf32>
}

// -----

// A written argument is copied back before the return; a buffer the program
// frees itself is not freed again.
// CHECK-LABEL: func.func @written_argument
// CHECK-SAME: (%[[X:.*]]: memref<8xf32>)
// CHECK: %[[DX:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.memcpy %[[DX]], %[[X]]
// CHECK: %[[T:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.dealloc %[[T]]
// CHECK: gpu.memcpy %[[X]], %[[DX]]
// CHECK-NEXT: gpu.dealloc %[[DX]]
// CHECK-NEXT: return
func.func @written_argument(%x: memref<8xf32>) {
  %t = memref.alloc() : memref<8xf32>
  linalg.copy ins(%x : memref<8xf32>) outs(%t : memref<8xf32>)
  linalg.add ins(%t, %t : memref<8xf32>, memref<8xf32>) outs(%x : memref<8xf32>)
  memref.dealloc %t : memref<8xf32>
  return
}

// -----

// Constants (inline weights) are copied to device memory where they are read.
memref.global "private" constant @weights : memref<2xf32> = dense<[1.0, 2.0]>

// CHECK-LABEL: func.func @global
// CHECK: %[[G:.*]] = memref.get_global @weights
// CHECK: %[[DG:.*]] = gpu.alloc () : memref<2xf32>
// CHECK: gpu.memcpy %[[DG]], %[[G]]
// CHECK: linalg.add ins(%[[DG]], %[[DG]]
// CHECK: gpu.dealloc %[[DG]]
func.func @global() -> memref<2xf32> {
  %g = memref.get_global @weights : memref<2xf32>
  %r = memref.alloc() : memref<2xf32>
  linalg.add ins(%g, %g : memref<2xf32>, memref<2xf32>) outs(%r : memref<2xf32>)
  return %r : memref<2xf32>
}

// -----

// An offloaded buffer (memory space "vram.pinned_host") stays a host
// allocation, pinned while it lives; copies to and from it are gpu.memcpy;
// it leaves the default memory space's types behind. Nothing frees it, so
// it is unpinned and freed at the return.
// CHECK-LABEL: func.func @pinned_host_buffer
// CHECK-SAME: (%[[X:.*]]: memref<16xf32>) -> memref<16xf32>
// CHECK: %[[DX:.*]] = gpu.alloc () : memref<16xf32>
// CHECK: %[[H:.*]] = memref.alloc() : memref<16xf32>
// CHECK: %[[HC:.*]] = memref.cast %[[H]] : memref<16xf32> to memref<*xf32>
// CHECK: gpu.host_register %[[HC]] : memref<*xf32>
// CHECK: gpu.memcpy %[[H]], %[[DX]] : memref<16xf32>, memref<16xf32>
// CHECK: %[[B:.*]] = gpu.alloc () : memref<16xf32>
// CHECK: gpu.memcpy %[[B]], %[[H]] : memref<16xf32>, memref<16xf32>
// CHECK: %[[R:.*]] = memref.alloc() : memref<16xf32>
// CHECK: gpu.memcpy %[[R]], %[[B]]
// CHECK: %[[HC2:.*]] = memref.cast %[[H]]
// CHECK: gpu.host_unregister %[[HC2]]
// CHECK: memref.dealloc %[[H]] : memref<16xf32>
// CHECK: return %[[R]]
// CHECK-NOT: pinned_host
func.func @pinned_host_buffer(%x: memref<16xf32>) -> memref<16xf32> {
  %h = memref.alloc() : memref<16xf32, "vram.pinned_host">
  memref.copy %x, %h : memref<16xf32> to memref<16xf32, "vram.pinned_host">
  %b = memref.alloc() : memref<16xf32>
  memref.copy %h, %b : memref<16xf32, "vram.pinned_host"> to memref<16xf32>
  return %b : memref<16xf32>
}
