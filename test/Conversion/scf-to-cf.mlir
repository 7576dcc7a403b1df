// RUN: vram-opt %s --vram-scf-to-cf | FileCheck %s

// Every structured op upstream's convert-scf-to-cf lowers, nested and in
// sequence, becomes a CFG; scf.parallel goes through an scf.for nest. (Every
// vram-run test executes what it makes of linalg's loops.)
// CHECK-LABEL: func.func @sum
// CHECK-NOT: scf.
// CHECK: cf.cond_br
// CHECK: cf.switch
// CHECK: return

func.func @sum(%buf: memref<4x4xf32>, %n: index, %k: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %zero, %buf[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  %total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> f32 {
    %inner = scf.for %j = %c0 to %c4 step %c1 iter_args(%a = %acc) -> f32 {
      %v = memref.load %buf[%c0, %j] : memref<4x4xf32>
      %big = arith.cmpf ogt, %v, %a : f32
      %m = scf.if %big -> f32 {
        scf.yield %v : f32
      } else {
        %s = arith.addf %a, %v : f32
        scf.yield %s : f32
      }
      scf.yield %m : f32
    }
    scf.yield %inner : f32
  }
  %w = scf.while (%x = %total) : (f32) -> f32 {
    %go = arith.cmpf olt, %x, %zero : f32
    scf.condition(%go) %x : f32
  } do {
  ^bb0(%y: f32):
    %z = arith.addf %y, %y : f32
    scf.yield %z : f32
  }
  %r = scf.index_switch %k -> f32
  case 0 {
    scf.yield %w : f32
  }
  default {
    %e = scf.execute_region -> f32 {
      scf.yield %zero : f32
    }
    scf.yield %e : f32
  }
  return %r : f32
}
