// RUN: vram-opt %s --vram-print-liveness -o /dev/null | FileCheck %s

// A host copy occupies no device memory: the memory analysis sizes only
// shaped types and !vram.host is not one. x and every 4x8xf32 tensor are
// 128 B; the offload reads %a (its last use), so %a dies there.
//   op 1 Relu:     x 128 + a 128           = 256
//   op 2 offload:  x 128 + a 128 + host 0  = 256
//   op 3 Neg:      x 128 + n 128           = 256
//   op 4 prefetch: x 128 + n 128 + p 128   = 384
//   op 5 Add:      x 128 + n 128 + p 128 + s 128 = 512 <- peak
// CHECK-LABEL: liveness @host_is_free: peak 512 bytes at op 5
// CHECK-DAG: buffer relu activation 128 live [1, 2]
// CHECK-DAG: buffer relu activation 0 live [2, 4]
// CHECK-DAG: buffer relu activation 128 live [4, 5]
// CHECK: op 2 vram.offload 'relu' live 256
// CHECK: op 4 vram.prefetch 'relu' live 384
func.func @host_is_free(%x: tensor<4x8xf32> {onnx.name = "x"}) -> tensor<4x8xf32> {
  %a = onnx.Relu(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %h = vram.offload %a : tensor<4x8xf32> -> !vram.host<tensor<4x8xf32>> loc("relu")
  %n = onnx.Neg(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("neg")
  %p = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf32> loc("relu")
  %s = onnx.Add(%n, %p) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("sum")
  return %s : tensor<4x8xf32>
}
