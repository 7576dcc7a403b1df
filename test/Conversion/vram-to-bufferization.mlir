// A memory plan's host copies become a new tensor filled by
// materialize_in_destination, which bufferizes to a fresh buffer plus
// memref.copy each; recompute clones stay as they are.
// RUN: vram-opt %s --split-input-file --vram-convert-vram-to-bufferization | FileCheck %s
// After bufferization as in vram-lower-to-cpu (onnx ops left alone here):
// two allocations and two copies; after the prefetch, its last reader, the
// host buffer is freed and only the returned one is retained.
// RUN: vram-opt %s --split-input-file --vram-convert-vram-to-bufferization \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries allow-unknown-ops function-boundary-type-conversion=identity-layout-map" \
// RUN:   --ownership-based-buffer-deallocation --canonicalize \
// RUN:   | FileCheck %s --check-prefix=BUFFERS

// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<16xf32>) -> tensor<16xf32>
// CHECK:      %[[A:.*]] = onnx.Relu(%[[X]])
// CHECK-NEXT: %[[HB:.*]] = bufferization.alloc_tensor() : tensor<16xf32>
// CHECK-NEXT: %[[H:.*]] = bufferization.materialize_in_destination %[[A]] in %[[HB]]
// CHECK-NEXT: %[[B:.*]] = onnx.Neg(%[[X]])
// CHECK-NEXT: %[[DB:.*]] = bufferization.alloc_tensor() : tensor<16xf32>
// CHECK-NEXT: %[[D:.*]] = bufferization.materialize_in_destination %[[H]] in %[[DB]]
// CHECK-NEXT: %[[R:.*]] = onnx.Relu(%[[X]]) {vram.recompute}
// CHECK-NEXT: %[[S:.*]] = onnx.Add(%[[D]], %[[R]])
// CHECK-NOT: vram.
func.func @round_trip(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = onnx.Relu(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %h = vram.offload %a : tensor<16xf32> -> !vram.host<tensor<16xf32>>
  %b = onnx.Neg(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %d = vram.prefetch %h : !vram.host<tensor<16xf32>> -> tensor<16xf32>
  %r = onnx.Relu(%x) {vram.recompute} : (tensor<16xf32>) -> tensor<16xf32>
  %s = onnx.Add(%d, %r) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %t = onnx.Add(%s, %b) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %t : tensor<16xf32>
}

// BUFFERS-LABEL: func.func @copies_only
// BUFFERS-SAME: (%[[X:.*]]: memref<4xf32>) -> memref<4xf32>
// BUFFERS:      %[[H:.*]] = memref.alloc() {{.*}}: memref<4xf32>
// BUFFERS-NEXT: memref.copy %[[X]], %[[H]]
// BUFFERS-NEXT: %[[D:.*]] = memref.alloc() {{.*}}: memref<4xf32>
// BUFFERS-NEXT: memref.copy %[[H]], %[[D]]
// BUFFERS-NEXT: bufferization.dealloc (%[[H]], %[[D]] : {{.*}}) if ({{.*}}) retain (%[[D]] : memref<4xf32>)
// BUFFERS-NEXT: return %[[D]]
func.func @copies_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = vram.offload %x : tensor<4xf32> -> !vram.host<tensor<4xf32>>
  %d = vram.prefetch %h : !vram.host<tensor<4xf32>> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// A host value crossing a call is retyped with the callee's signature.
// CHECK-LABEL: func.func private @bring_back
// CHECK-SAME: (%[[H:.*]]: tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[B:.*]] = bufferization.alloc_tensor() : tensor<8xf32>
// CHECK-NEXT: bufferization.materialize_in_destination %[[H]] in %[[B]]
func.func private @bring_back(%h: !vram.host<tensor<8xf32>>) -> tensor<8xf32> {
  %d = vram.prefetch %h : !vram.host<tensor<8xf32>> -> tensor<8xf32>
  return %d : tensor<8xf32>
}

// CHECK-LABEL: func.func @caller
// CHECK:      %[[H:.*]] = bufferization.materialize_in_destination
// CHECK-NEXT: call @bring_back(%[[H]]) : (tensor<8xf32>) -> tensor<8xf32>
func.func @caller(%x: tensor<8xf32>) -> tensor<8xf32> {
  %h = vram.offload %x : tensor<8xf32> -> !vram.host<tensor<8xf32>>
  %d = call @bring_back(%h) : (!vram.host<tensor<8xf32>>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}
