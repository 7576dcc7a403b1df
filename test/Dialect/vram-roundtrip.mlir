// RUN: vram-opt %s --split-input-file | vram-opt --split-input-file | FileCheck %s
// RUN: vram-opt %s --split-input-file --cse --canonicalize | FileCheck %s --check-prefix=OPT

// The copies print and parse back unchanged.
// CHECK-LABEL: func.func @round_trip
// CHECK: %[[H:.*]] = vram.offload %{{.*}} : tensor<4x8xf32> -> !vram.host<tensor<4x8xf32>>
// CHECK: vram.prefetch %[[H]] : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32>
// CHECK: onnx.Relu(%{{.*}}) {vram.recompute}
func.func @round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = onnx.Relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = vram.offload %a : tensor<4x8xf32> -> !vram.host<tensor<4x8xf32>>
  %b = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32>
  %c = onnx.Relu(%x) {vram.recompute} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = onnx.Add(%b, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Upstream cleanups keep a plan: two prefetches of one host copy allocate
// two device tensors and are not merged by CSE (merging would keep one
// tensor alive across the gap between its uses), and a recompute clone
// differs from its original by its attribute. A prefetch nobody reads is
// dead and goes.
// OPT-LABEL: func.func @cleanups_keep_plan
// OPT: %[[A:.*]] = onnx.Relu(%{{.*}}) :
// OPT: %[[H:.*]] = vram.offload %[[A]]
// OPT: %[[P1:.*]] = vram.prefetch %[[H]]
// OPT: %[[P2:.*]] = vram.prefetch %[[H]]
// OPT: %[[R:.*]] = onnx.Relu(%{{.*}}) {vram.recompute}
// OPT-NOT: vram.prefetch
// OPT: return
func.func @cleanups_keep_plan(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = onnx.Relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = vram.offload %a : tensor<4x8xf32> -> !vram.host<tensor<4x8xf32>>
  %p1 = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32>
  %p2 = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32>
  %r = onnx.Relu(%x) {vram.recompute} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %dead = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32>
  return %a, %p1, %p2, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
