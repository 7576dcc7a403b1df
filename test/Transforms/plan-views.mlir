// The planner's tensors are the memory analysis' buffers: a view shares its
// source's tensor, so recomputing the source re-derives the view from the
// new instance, and the planner's peak is the planned IR's, to the byte.
// RUN: vram-opt %s --vram-plan="budget=1843208 allow-offload=false print-plan=true" --vram-verify-plan \
// RUN:   | FileCheck %s

// Persistent: x 16x4096, w 4096x16, w3 4096x16 (262,144 B each), wt 4096x64
// (1,048,576 B) and the shape constant (8 B) = 1,835,016 B. Activations: a
// 16x16 (1,024 B) and its view av, t and u 16x64 (4,096 B), r 16x16 and its
// view rv, g 256 (1,024 B). Unplanned live bytes above the persistent ones:
// a 1,024; t a+t 5,120; u a+t+u 9,216 <- peak (1,844,232); r a+r 2,048
// (t and u are dead); g a+r+g 3,072. The views add nothing: counted once,
// the unplanned peak would be 1,024 B higher with av as a tensor of its own.
// The budget, persistent + 8,192, leaves u's op short by a's 1,024 B: a is
// dropped after its view is taken and recomputed for g, whose operand is
// then a view of the new a.

// CHECK-LABEL: plan @view_of_recomputed: budget 1,843,208 B, planned peak 1,843,208 B (unplanned 1,844,232 B); 1 recomputations
// CHECK:      a: 1,024 B saved_activation, recomputed 1x

// CHECK-LABEL: func.func @view_of_recomputed
// CHECK-SAME: vram.planned_peak = 1843208 : i64
// CHECK:      onnx.MatMul(%arg0, %arg1)
// CHECK-NEXT: onnx.Reshape
// CHECK-NEXT: onnx.MatMul(%arg0, %arg2)
// CHECK-NEXT: onnx.Neg
// CHECK-NEXT: onnx.ReduceMean
// CHECK-NEXT: %[[R:.*]] = onnx.MatMul(%arg0, %arg3)
// CHECK-NEXT: %[[RV:.*]] = onnx.Reshape(%[[R]], %[[SHAPE:[0-9]+]])
// CHECK-NEXT: %[[A2:.*]] = onnx.MatMul(%arg0, %arg1) {vram.recompute}
// CHECK-NEXT: %[[AV2:.*]] = onnx.Reshape(%[[A2]], %[[SHAPE]]) {vram.recompute}
// CHECK-NEXT: onnx.Mul(%[[RV]], %[[AV2]])
func.func @view_of_recomputed(%x: tensor<16x4096xf32> {onnx.name = "x"},
                              %w: tensor<4096x16xf32> {onnx.name = "w", vram.param = #vram.param<trainable>},
                              %wt: tensor<4096x64xf32> {onnx.name = "wt", vram.param = #vram.param<trainable>},
                              %w3: tensor<4096x16xf32> {onnx.name = "w3", vram.param = #vram.param<trainable>})
    -> (tensor<256xf32>, tensor<16x1xf32>) {
  %shape = onnx.Constant() {value = dense<[256]> : tensor<1xi64>} : () -> tensor<1xi64> loc("shape")
  %a = onnx.MatMul(%x, %w) : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("a")
  %av = onnx.Reshape(%a, %shape) : (tensor<16x16xf32>, tensor<1xi64>) -> tensor<256xf32> loc("av")
  %t = onnx.MatMul(%x, %wt) : (tensor<16x4096xf32>, tensor<4096x64xf32>) -> tensor<16x64xf32> loc("t")
  %u = onnx.Neg(%t) : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("u")
  %v = onnx.ReduceMean(%u) {axes = [1], keepdims = 1 : i64} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("v")
  %r = onnx.MatMul(%x, %w3) {vram.phase = #vram.phase<backward>} : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("r")
  %rv = onnx.Reshape(%r, %shape) {vram.phase = #vram.phase<backward>} : (tensor<16x16xf32>, tensor<1xi64>) -> tensor<256xf32> loc("rv")
  %g = onnx.Mul(%rv, %av) {vram.phase = #vram.phase<backward>} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("g")
  return %g, %v : tensor<256xf32>, tensor<16x1xf32>
}
