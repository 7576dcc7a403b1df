// vram-static-arena on a training step bufferized by the real pipeline
// (vram-train, then vram-lower-to-buffers, as vram-lower-to-gpu runs them).
// RUN: vram-opt %s --pass-pipeline='builtin.module(vram-train{loss=mse optimizer=sgd lr=0.5},vram-lower-to-buffers,canonicalize,func.func(vram-static-arena{print-stats}))' 2>&1 | FileCheck %s

// y = Relu(x W), MSE against labels, SGD. After bufferization every op
// result has its own buffer (as in the memory analysis: no two unrelated
// results share one), except that dY = C * 0.25 and the select that masks
// it are one loop nest (vram-fuse-elementwise-ops: the select runs right
// after it and is its only reader): nine in all. One escapes: the loss
// (memref<f32>) is returned; W is updated in place in its argument
// (vram.update) and is no longer a result. Eight are placed, each in one
// 256-byte slot (at most 48 bytes each: 4x2xf32, the 4x2xi1 mask, dW
// 3x2xf32, a scalar):
//   A  x W, until Relu reads it       Y  y = Relu(A), until y - t
//   M  mask y > 0, until the select   C  y - t, until the masked dY
//   S  (y - t)^2, until the sum       L  the sum, until the mean
//   G  the masked dY, until the dW Gemm
//   W  dW = x^T G (the Gemm reads x transposed: no copy), until the update
// Most live at once: M, C, S and L at the sum: 4 slots, 4 x 256 = 1024
// bytes, reached; without reuse 8 x 256 = 2048.
// CHECK: remark: arena 1024 bytes for 8 buffers; max-live lower bound 1024 bytes (ratio 1.000), 2048 bytes without reuse

// CHECK-LABEL: func.func @main(%arg0
// CHECK-SAME: -> (memref<f32> {onnx.name = "loss"}) attributes {vram.results_in_arguments = array<i64: -1, 1>}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 256 : i64} : memref<1024xi8>
// CHECK-COUNT-6: memref.view %[[ARENA]]
// The loss is returned: it stays its own allocation.
// CHECK: %[[LOSS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<f32>
// CHECK-COUNT-2: memref.view %[[ARENA]]
// CHECK-NOT: memref.view %[[ARENA]]
// CHECK: linalg.generic {{.*}} outs(%arg1 : memref<3x2xf32>)
// CHECK: memref.dealloc %[[ARENA]] : memref<1024xi8>
// CHECK-NEXT: return %[[LOSS]] : memref<f32>

func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"},
                %w: tensor<3x2xf32> {onnx.name = "W", vram.param = #vram.param<trainable>})
    -> tensor<4x2xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = onnx.Relu(%0) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}
