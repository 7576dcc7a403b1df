// RUN: not vram-opt %s --vram-print-memory="budget=12parsecs" -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: invalid byte size '12parsecs': expected a number with an optional unit
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  return %x : tensor<8xf32>
}
