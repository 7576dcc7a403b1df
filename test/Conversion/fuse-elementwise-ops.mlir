// RUN: vram-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(vram-fuse-elementwise-ops))" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// exp then add: one loop nest computing both, no tensor in between.
// CHECK-LABEL: func.func @chain
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @chain(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %empty = tensor.empty() : tensor<4x6xf32>
  %e = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%empty : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%e, %y : tensor<4x6xf32>, tensor<4x6xf32>)
      outs(%empty : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A per-row sigmoid broadcast over a 4x6 product: fused, it would compute
// the exp 24 times instead of 4. Both ops stay.
// CHECK-LABEL: func.func @broadcast_read
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: arith.mulf
func.func @broadcast_read(%gate: tensor<4xf32>, %x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %one = arith.constant 1.0 : f32
  %row = tensor.empty() : tensor<4xf32>
  %sigmoid = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                              affine_map<(d0) -> (d0)>],
                             iterator_types = ["parallel"]}
      ins(%gate : tensor<4xf32>) outs(%row : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %empty = tensor.empty() : tensor<4x6xf32>
  %scaled = linalg.generic {indexing_maps = [#row, #id, #id],
                            iterator_types = ["parallel", "parallel"]}
      ins(%sigmoid, %x : tensor<4xf32>, tensor<4x6xf32>)
      outs(%empty : tensor<4x6xf32>) {
  ^bb0(%g: f32, %v: f32, %out: f32):
    %0 = arith.mulf %g, %v : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  return %scaled : tensor<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The exp is read twice (by the add and returned): fusing would compute it
// twice. Both ops stay.
// CHECK-LABEL: func.func @two_readers
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[S:.*]] = linalg.generic
// CHECK-SAME: ins(%[[E]],
// CHECK: return %[[S]], %[[E]]
func.func @two_readers(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %empty = tensor.empty() : tensor<4x6xf32>
  %e = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%empty : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%e, %y : tensor<4x6xf32>, tensor<4x6xf32>)
      outs(%empty : tensor<4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  return %s, %e : tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An init the body does not read stays the destination (upstream's fusion
// patterns would make it a tensor.empty, and bufferization would allocate
// where the op writes into the argument in place).
// CHECK-LABEL: func.func @unread_init
// CHECK-NOT: tensor.empty
// CHECK: linalg.generic
// CHECK-SAME: outs(%arg0 : tensor<4x6xf32>)
func.func @unread_init(%param: tensor<4x6xf32>, %x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%param : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
