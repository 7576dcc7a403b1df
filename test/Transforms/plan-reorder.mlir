// Reordering alone lowers the peak.
// RUN: vram-opt %s --vram-plan="budget=1MB allow-reorder=true" --vram-verify-plan \
// RUN:   | FileCheck %s
// RUN: vram-opt %s --vram-plan="budget=1MB" | FileCheck %s --check-prefix=KEEP

// Two branches each make a 1024 x f32 tensor (4,096 B) and reduce it to one
// float (4 B). x is 4,096 B. In the written order both big tensors are live
// at once:
//   a x+a 8,192; b x+a+b 12,288; ra x+a+b+ra 12,292 <- peak;
//   rb x+b+ra+rb 8,200; sum x+ra+rb+s 4,108.
// The memory order runs each reduction right after its producer (ra frees
// a: -4,092 B, where b grows +4,096 B):
//   a 8,192; ra x+a+ra 8,196; b x+ra+b 8,196; rb x+ra+b+rb 8,200 <- peak;
//   sum 4,108.
// Both orders need no recomputation; the lower peak decides.

// CHECK-LABEL: func.func @branches
// CHECK-SAME: vram.planned_peak = 8200 : i64
// CHECK:      %[[A:.*]] = onnx.Exp(%arg0)
// CHECK-NEXT: %[[RA:.*]] = onnx.ReduceMean(%[[A]])
// CHECK-NEXT: %[[B:.*]] = onnx.Neg(%arg0)
// CHECK-NEXT: %[[RB:.*]] = onnx.ReduceMean(%[[B]])
// CHECK-NEXT: onnx.Add(%[[RA]], %[[RB]])

// KEEP-LABEL: func.func @branches
// KEEP-SAME: vram.planned_peak = 12292 : i64
// KEEP:      onnx.Exp
// KEEP-NEXT: onnx.Neg
// KEEP-NEXT: onnx.ReduceMean
// KEEP-NEXT: onnx.ReduceMean
func.func @branches(%x: tensor<1024xf32> {onnx.name = "x"}) -> tensor<1xf32> {
  %a = onnx.Exp(%x) : (tensor<1024xf32>) -> tensor<1024xf32> loc("a")
  %b = onnx.Neg(%x) : (tensor<1024xf32>) -> tensor<1024xf32> loc("b")
  %ra = onnx.ReduceMean(%a) {axes = [0], keepdims = 1 : i64} : (tensor<1024xf32>) -> tensor<1xf32> loc("ra")
  %rb = onnx.ReduceMean(%b) {axes = [0], keepdims = 1 : i64} : (tensor<1024xf32>) -> tensor<1xf32> loc("rb")
  %s = onnx.Add(%ra, %rb) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32> loc("sum")
  return %s : tensor<1xf32>
}
