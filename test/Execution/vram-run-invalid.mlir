// vram-run refuses functions it cannot call, with an error on @main.
// RUN: not vram-run %s 2>&1 | FileCheck %s

// CHECK: error: argument 0 ('argument0') has type 'tensor<?xf32>'; only statically shaped tensors can be passed to and from compiled code
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
