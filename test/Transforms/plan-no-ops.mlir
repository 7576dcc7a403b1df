// A function without ops holds its argument throughout: it plans to a peak
// of the argument's bytes (tensor<4xf32>: 4 x 4 B = 16 B), in the IR's
// order and with reordering, and a budget below that is refused with the
// smallest one that can be met (it used to end in an internal error: the
// planner's graph took the arguments from the first op's block).
// RUN: vram-opt %s --vram-plan="budget=16 allow-offload=false" | FileCheck %s
// RUN: vram-opt %s --vram-plan="budget=1MB allow-reorder=true" | FileCheck %s
// RUN: not vram-opt %s --vram-plan="budget=15 allow-offload=false" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TIGHT

// CHECK: vram.planned_peak = 16 : i64
// TIGHT: error: budget of 15 bytes (15 B) cannot be met: the smallest budget that can be met is 16 bytes (16 B); no plan can go below 16 bytes (16 B) (16 B of arguments kept on the device + 0 B of inputs before the first op)
func.func @identity(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
