// Lowering must not undo a plan: a recomputed op is equal to the one it
// repeats, and merging the two (CSE on tensors did, for ops without a
// destination such as this concat) keeps the original result live until the
// rerun's readers.
// RUN: vram-opt %s --vram-print-memory | FileCheck %s
// RUN: vram-opt %s --pass-pipeline="builtin.module(vram-lower-to-buffers)" \
// RUN:   | vram-opt --vram-print-memory | FileCheck %s

// Arguments a, b (8,192 B each), w, v (65,536 B each): 147,456 B. The plan
// frees c (16,384 B) after `up` and rebuilds it before `add`. While `up`
// runs: 147,456 + c 16,384 + x 65,536 = 229,376; while `down` runs: x and y
// (16,384) = 229,376; while `add` runs: c2, y, the result = 196,608. Lowered
// with the two concats merged, c stays through `down`: 245,760.
// CHECK: Peak: 224 KiB (229,376 bytes
func.func @main(%a: tensor<32x64xf32> {onnx.name = "a"}, %b: tensor<32x64xf32> {onnx.name = "b"}, %w: tensor<64x256xf32> {onnx.name = "w"}, %v: tensor<256x64xf32> {onnx.name = "v"}) -> tensor<64x64xf32> {
  %c = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<64x64xf32> loc("concat")
  %x = onnx.MatMul(%c, %w) : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x256xf32> loc("up")
  %y = onnx.MatMul(%x, %v) : (tensor<64x256xf32>, tensor<256x64xf32>) -> tensor<64x64xf32> loc("down")
  %c2 = onnx.Concat(%a, %b) {axis = 0 : i64, vram.recompute} : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<64x64xf32> loc("concat")
  %s = onnx.Add(%c2, %y) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("add")
  return %s : tensor<64x64xf32>
}
