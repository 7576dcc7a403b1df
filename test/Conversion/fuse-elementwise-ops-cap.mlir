// RUN: vram-opt %s --pass-pipeline="builtin.module(func.func(vram-fuse-elementwise-ops{max-body-ops=4}))" | FileCheck %s

// A chain of four exps with fused bodies capped at 4 operations: two
// exps and the yield (3) fit, a third exp would not (3 + 2 > 4), so the
// chain becomes two loop nests of two exps each.
// CHECK-LABEL: func.func @capped
// CHECK: %[[A:.*]] = linalg.generic
// CHECK-COUNT-2: math.exp
// CHECK-NOT: math.exp
// CHECK: linalg.yield
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[A]]
// CHECK-COUNT-2: math.exp
// CHECK-NOT: math.exp
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[B]]
#id = affine_map<(d0) -> (d0)>
func.func @capped(%x: tensor<8xf32>) -> tensor<8xf32> {
  %empty = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : tensor<8xf32>) outs(%empty : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<8xf32>
  return %d : tensor<8xf32>
}
