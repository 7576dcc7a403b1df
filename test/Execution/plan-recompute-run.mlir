// Planning never changes results: an inference function forced to recompute
// gives the same outputs, bit for bit, as the unplanned one. vram-run prints
// 9 significant digits, which round-trips every f32 exactly.
// RUN: vram-opt %s --vram-plan="budget=4096 allow-offload=false" --vram-verify-plan -o %t.planned.mlir
// RUN: FileCheck %s < %t.planned.mlir
// RUN: vram-run %s --print --seed=11 > %t.unplanned.txt
// RUN: vram-run %t.planned.mlir --print --seed=11 > %t.planned.txt
// RUN: diff %t.unplanned.txt %t.planned.txt

// Every tensor is 256 x f32 = 1,024 B; x is the caller's. Unplanned live
// bytes peak at mul1: x + a + b + c + d = 5,120. With 4,096 B and no host
// link, a (read again by mul2) is dropped after exp and recomputed from x
// (test/Transforms/plan-recompute.mlir has the same graph as a training
// step): peak x + b + c + d = 4,096.
// CHECK-LABEL: func.func @main
// CHECK-SAME: vram.planned_peak = 4096
// CHECK: onnx.Relu(%arg0) {vram.recompute}
func.func @main(%x: tensor<256xf32> {onnx.name = "x"}) -> tensor<256xf32> {
  %a = onnx.Relu(%x) : (tensor<256xf32>) -> tensor<256xf32> loc("relu")
  %b = onnx.Exp(%a) : (tensor<256xf32>) -> tensor<256xf32> loc("exp")
  %c = onnx.Neg(%b) : (tensor<256xf32>) -> tensor<256xf32> loc("neg")
  %d = onnx.Mul(%c, %b) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("mul1")
  %e = onnx.Mul(%d, %a) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("mul2")
  return %e : tensor<256xf32>
}
