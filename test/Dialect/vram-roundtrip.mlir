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

// -----

// In-place optimizer updates print the rule as a keyword; in the generic
// form it is the attribute #vram<rule ...>, which parses back too.
// RUN: vram-opt %s --split-input-file --mlir-print-op-generic | vram-opt --split-input-file | FileCheck %s --check-prefix=UPDATE
// CHECK-LABEL: func.func @updates
// CHECK: %[[T:.*]] = vram.increment %{{.*}} : tensor<f32>
// CHECK: vram.update adamw %{{.*}} step %[[T]] scale %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}} {learning_rate = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4xf32>, tensor<f32>, tensor<f32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK: vram.update momentum %{{.*}} into %{{.*}}, %{{.*}} {learning_rate = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64} : tensor<4xbf16> -> tensor<4xbf16>, tensor<4xbf16>
// UPDATE-LABEL: func.func @updates
// UPDATE: vram.update adamw
// UPDATE: vram.update momentum
func.func @updates(%p: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>,
                   %g: tensor<4xf32>, %t: tensor<f32>, %s: tensor<f32>,
                   %q: tensor<4xbf16>, %w: tensor<4xbf16>, %h: tensor<4xbf16>)
    -> (tensor<4xf32>, tensor<4xbf16>) {
  %t1 = vram.increment %t : tensor<f32>
  %r:3 = vram.update adamw %g step %t1 scale %s into %p, %m, %v {learning_rate = 1.0e-3 : f64, weight_decay = 1.0e-2 : f64} : tensor<4xf32>, tensor<f32>, tensor<f32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %u:2 = vram.update momentum %h into %q, %w {learning_rate = 0.1 : f64, momentum = 0.9 : f64} : tensor<4xbf16> -> tensor<4xbf16>, tensor<4xbf16>
  return %r#0, %u#0 : tensor<4xf32>, tensor<4xbf16>
}
