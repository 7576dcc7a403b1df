// Planning never changes results: a function forced to offload a tensor
// and prefetch it back gives the same outputs, bit for bit. On CPU the copies
// are real: the pipeline copies the tensor into a separate host buffer and
// back into a fresh one.
// RUN: vram-opt %s --vram-plan="budget=1843200" --vram-verify-plan -o %t.planned.mlir
// RUN: FileCheck %s < %t.planned.mlir
// RUN: vram-run %s --print --seed=5 > %t.unplanned.txt
// RUN: vram-run %t.planned.mlir --print --seed=5 > %t.planned.txt
// RUN: diff %t.unplanned.txt %t.planned.txt
// The CPU pipeline takes the planned IR as it is (the pass is its first
// step); test/Conversion/vram-to-bufferization.mlir checks the copies.
// RUN: vram-opt %t.planned.mlir --vram-lower-to-cpu -o /dev/null

// The graph and budget of test/Transforms/plan-offload.mlir: persistent
// arguments take 1,835,008 B, the budget leaves 8,192 B above them, so a
// (16x16 f32, 1,024 B) must leave the device while t and u exist; on H100
// its 16 ns copies hide behind the MatMuls, so it is offloaded, not rebuilt.
// CHECK-LABEL: func.func @main
// CHECK: %[[A:.*]] = onnx.MatMul(%arg0, %arg1)
// CHECK: %[[H:.*]] = vram.offload %[[A]]
// CHECK: %[[A2:.*]] = vram.prefetch %[[H]]
// CHECK: onnx.Mul(%{{.*}}, %[[A2]])
// CHECK-NOT: vram.recompute

func.func @main(%x: tensor<16x4096xf32> {onnx.name = "x"},
                %w: tensor<4096x16xf32> {onnx.name = "w", vram.param = #vram.param<trainable>},
                %wt: tensor<4096x64xf32> {onnx.name = "wt", vram.param = #vram.param<trainable>},
                %w3: tensor<4096x16xf32> {onnx.name = "w3", vram.param = #vram.param<trainable>})
    -> tensor<16x16xf32> {
  %a = onnx.MatMul(%x, %w) : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("a")
  %t = onnx.MatMul(%x, %wt) : (tensor<16x4096xf32>, tensor<4096x64xf32>) -> tensor<16x64xf32> loc("t")
  %u = onnx.Neg(%t) : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("u")
  %v = onnx.ReduceMean(%u) {axes = [1], keepdims = 1 : i64} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("v")
  %r = onnx.MatMul(%x, %w3) {vram.phase = #vram.phase<backward>} : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("r")
  %g = onnx.Mul(%r, %a) {vram.phase = #vram.phase<backward>} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("g")
  %h = onnx.Add(%g, %v) {vram.phase = #vram.phase<backward>} : (tensor<16x16xf32>, tensor<16x1xf32>) -> tensor<16x16xf32> loc("h")
  return %h : tensor<16x16xf32>
}
