// A budget that forces exactly one recomputation.
// RUN: vram-opt %s --vram-plan="budget=4096 allow-offload=false print-plan=true" \
// RUN:   --vram-verify-plan | FileCheck %s
// The exact MILP finds the same plan: recomputing the Relu is the only way.
// RUN: vram-opt %s --vram-plan="budget=4096 planner=milp" --vram-verify-plan \
// RUN:   | FileCheck %s --check-prefix=MILP

// Forward Relu, Exp, Neg, then the backward pass reads b and a again. Every
// tensor is 256 x f32 = 1,024 B; x is the caller's, live throughout.
// Unplanned live bytes:
//   relu: x + a                 = 2,048
//   exp:  x + a + b             = 3,072
//   neg:  x + a + b + c         = 4,096
//   grad_exp:  x + a + b + c + d = 5,120  <- peak (a waits for grad_relu)
//   grad_relu: x + a + d + e     = 4,096
// With 4,096 B, grad_exp must run without a: its inputs b and c and its
// output d already take 3 KiB besides x, so the lower bound is 1,024 +
// 3,072 = 4,096 and a is the only tensor that can go. Without offload, a is
// recomputed from x right before grad_relu. Planned IR (a now dies at exp):
//   relu 2,048; exp 3,072; neg x+b+c 3,072; grad_exp x+b+c+d 4,096;
//   relu' x+d+a' 3,072; grad_relu x+d+a'+e 4,096  -> peak 4,096.
// Times on H100 (3.35 TB/s, memory-bound): unary ops move 2,048 B, Muls
// 3,072 B, so the recomputation adds 2,048 / (3 x 2,048 + 2 x 3,072) = 1/6.

// CHECK-LABEL: plan @train_step: budget 4,096 B, planned peak 4,096 B (unplanned 5,120 B); 1 recomputations, 0 B offloaded, 0 arguments in host memory (0 B); overhead 16.7%
// CHECK-NEXT: layer relu: kept 0 B, recomputed 1,024 B, offloaded 0 B
// CHECK-NEXT: relu: 1,024 B saved_activation, recomputed 1x: 0.611 ns to rebuild (offload disabled)
// CHECK-NEXT: layer exp: kept 1,024 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT: exp: 1,024 B saved_activation, kept: the budget allows it
// CHECK-NEXT: layer neg: kept 1,024 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT: neg: 1,024 B saved_activation, kept: the budget allows it
// CHECK-NEXT: layer grad_exp: kept 1,024 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT: grad_exp: 1,024 B activation, kept: the budget allows it
// CHECK-NEXT: layer grad_relu: kept 1,024 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT: grad_relu: 1,024 B output, kept: output stays to the end

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: vram.budget = 4096 : i64, vram.plan = {{{.*}}unplanned_peak = 5120 : i64{{.*}}}, vram.planned_peak = 4096 : i64
// CHECK:      %[[A:.*]] = onnx.Relu(%arg0) :
// CHECK-NEXT: %[[B:.*]] = onnx.Exp(%[[A]])
// CHECK-NEXT: %[[C:.*]] = onnx.Neg(%[[B]])
// CHECK-NEXT: %[[D:.*]] = onnx.Mul(%[[C]], %[[B]])
// CHECK-NEXT: %[[A2:.*]] = onnx.Relu(%arg0) {vram.recompute}
// CHECK-NEXT: %[[E:.*]] = onnx.Mul(%[[D]], %[[A2]])
// CHECK-NEXT: return %[[E]]


// MILP-LABEL: func.func @train_step
// MILP: onnx.Mul
// MILP-NEXT: onnx.Relu(%arg0) {vram.recompute}
// MILP-NEXT: onnx.Mul
func.func @train_step(%x: tensor<256xf32> {onnx.name = "x"}) -> tensor<256xf32> {
  %a = onnx.Relu(%x) : (tensor<256xf32>) -> tensor<256xf32> loc("relu")
  %b = onnx.Exp(%a) : (tensor<256xf32>) -> tensor<256xf32> loc("exp")
  %c = onnx.Neg(%b) : (tensor<256xf32>) -> tensor<256xf32> loc("neg")
  %d = onnx.Mul(%c, %b) {vram.phase = #vram.phase<backward>} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("grad_exp")
  %e = onnx.Mul(%d, %a) {vram.phase = #vram.phase<backward>} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> loc("grad_relu")
  return %e : tensor<256xf32>
}
