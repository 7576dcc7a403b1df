// vram-lower-to-cpu places intermediate buffers in one static arena, as
// vram-lower-to-gpu does, so a CPU run reuses memory the way a GPU run
// would, and a placement that let live buffers overlap would show up as
// wrong results here.
// RUN: vram-opt %s --vram-lower-to-cpu -o /dev/null \
// RUN:   --mlir-print-ir-after=vram-static-arena 2>&1 | FileCheck %s --check-prefix=ARENA
// RUN: vram-run %s --print | FileCheck %s

// a = x + 1, b = a * 2, c = b + 1, d = c * 3: each 8xf32 buffer (32 bytes,
// one 64-byte slot at the CPU's alignment) lives from its write to the next
// op, so at most two are live at once: a 128-byte arena, where c reuses a's
// offset. d is the result, computed straight into the caller's buffer
// (the out-param %arg0), with no allocation of its own. The arena is freed
// by ownership-based deallocation, which runs after.
// ARENA: func.func @main(%[[OUT:.*]]: memref<8xf32>)
// ARENA: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// ARENA: %[[OA:.*]] = arith.constant 0 : index
// ARENA-NEXT: memref.view %[[ARENA]][%[[OA]]][] : memref<128xi8> to memref<8xf32>
// ARENA: %[[OB:.*]] = arith.constant 64 : index
// ARENA-NEXT: memref.view %[[ARENA]][%[[OB]]][] : memref<128xi8> to memref<8xf32>
// ARENA: %[[OC:.*]] = arith.constant 0 : index
// ARENA-NEXT: memref.view %[[ARENA]][%[[OC]]][] : memref<128xi8> to memref<8xf32>
// ARENA-NOT: memref.alloc
// ARENA: outs(%[[OUT]] : memref<8xf32>)
// ARENA-NOT: memref.dealloc
// ARENA: return

// ((x + 1) * 2 + 1) * 3 for x = 0..7: 9, 15, 21, ..., 51.
// CHECK:      output 0 'result0': tensor<8xf32>
// CHECK-NEXT: {{^}}[9, 15, 21, 27, 33, 39, 45, 51]

// Named ops (linalg.add, linalg.mul), which vram-fuse-elementwise-ops
// leaves alone, so that each result is a buffer of its own (as
// linalg.generic ops, the chain would be one loop nest).
func.func @main() -> tensor<8xf32> {
  %x = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %one = arith.constant dense<1.0> : tensor<8xf32>
  %two = arith.constant dense<2.0> : tensor<8xf32>
  %three = arith.constant dense<3.0> : tensor<8xf32>
  %ea = tensor.empty() : tensor<8xf32>
  %a = linalg.add ins(%x, %one : tensor<8xf32>, tensor<8xf32>)
      outs(%ea : tensor<8xf32>) -> tensor<8xf32>
  %eb = tensor.empty() : tensor<8xf32>
  %b = linalg.mul ins(%a, %two : tensor<8xf32>, tensor<8xf32>)
      outs(%eb : tensor<8xf32>) -> tensor<8xf32>
  %ec = tensor.empty() : tensor<8xf32>
  %c = linalg.add ins(%b, %one : tensor<8xf32>, tensor<8xf32>)
      outs(%ec : tensor<8xf32>) -> tensor<8xf32>
  %ed = tensor.empty() : tensor<8xf32>
  %d = linalg.mul ins(%c, %three : tensor<8xf32>, tensor<8xf32>)
      outs(%ed : tensor<8xf32>) -> tensor<8xf32>
  return %d : tensor<8xf32>
}
