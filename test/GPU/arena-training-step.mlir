// vram-static-arena on a training step bufferized by the real pipeline
// (vram-train, then vram-lower-to-buffers, as vram-lower-to-gpu runs them).
// RUN: vram-opt %s --pass-pipeline='builtin.module(vram-train{loss=mse optimizer=sgd lr=0.5},vram-lower-to-buffers,canonicalize,func.func(vram-static-arena{print-stats}))' 2>&1 | FileCheck %s

// y = Relu(x W), MSE against labels, SGD. After bufferization the step
// allocates six buffers. One escapes: the loss (memref<f32>) is returned;
// W is updated in place in its argument (vram.update) and is no longer a
// result. Five are placed, each in one 256-byte slot (32 bytes for 4x2xf32,
// 8 for the 4x2xi1 mask, 48 for x^T 3x4xf32, 24 for dW 3x2xf32):
//   A  4x2  matmul x W, Relu's output y in place, then (y-t)^2, dY and the
//          masked dY, until the dW matmul
//   M  4x2  mask y > 0, computed in forward right after y (backward reads
//          y for nothing else), until the select
//   C  4x2  y - t, until dY = C * 0.25
//   T  3x4  x^T, until the dW matmul
//   D  3x2  dW, until the update reads it
// Most live at once: A, M, C from y - t to dY (and A, T, D at the dW
// matmul): 3 slots, 3 x 256 = 768 bytes, reached; without reuse
// 5 x 256 = 1280.
// CHECK: remark: arena 768 bytes for 5 buffers; max-live lower bound 768 bytes (ratio 1.000), 1280 bytes without reuse

// CHECK-LABEL: func.func @main(%arg0
// CHECK-SAME: -> (memref<f32> {onnx.name = "loss"}) attributes {vram.results_in_arguments = array<i64: -1, 1>}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 256 : i64} : memref<768xi8>
// CHECK-COUNT-3: memref.view %[[ARENA]]
// The loss is returned: it stays its own allocation.
// CHECK: %[[LOSS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<f32>
// CHECK-COUNT-3: memref.view %[[ARENA]]
// CHECK: linalg.generic {{.*}} outs(%arg1 : memref<3x2xf32>)
// CHECK: memref.dealloc %[[ARENA]] : memref<768xi8>
// CHECK-NEXT: return %[[LOSS]] : memref<f32>

func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"},
                %w: tensor<3x2xf32> {onnx.name = "W", vram.param = "trainable"})
    -> tensor<4x2xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = onnx.Relu(%0) : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}
