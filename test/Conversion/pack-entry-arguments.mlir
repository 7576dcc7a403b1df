// RUN: vram-opt %s --vram-pack-entry-arguments | FileCheck %s
// RUN: vram-opt %s --vram-pack-entry-arguments=entry=harness | FileCheck %s --check-prefix=NOARGS
// RUN: not vram-opt %s --vram-pack-entry-arguments=entry=missing 2>&1 | FileCheck %s --check-prefix=MISSING

// @main's argument and result move behind one pointer: slot 0 points to the
// argument's descriptor (loaded), slot 1 to where the result's goes
// (stored). A rank-1 descriptor is {allocated, aligned, offset, [size],
// [stride]}; the casts fold away in the LLVM lowering.
// CHECK: func.func @main(%[[ARRAY:.*]]: !llvm.ptr) {
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[ARRAY]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[ARG0:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[DESC:.*]] = llvm.load %[[ARG0]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[A:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : {{.*}} to memref<4xf32>
// CHECK: %[[R:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[A]], %[[R]]
// CHECK: %[[OUT:.*]] = builtin.unrealized_conversion_cast %[[R]] : memref<4xf32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[ARRAY]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[RES0:.*]] = llvm.load %[[SLOT1]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.store %[[OUT]], %[[RES0]]
// CHECK-NEXT: return{{$}}
func.func @main(%a: memref<4xf32> {onnx.name = "x"}) -> (memref<4xf32> {onnx.name = "y"}) {
  %r = memref.alloc() : memref<4xf32>
  memref.copy %a, %r : memref<4xf32> to memref<4xf32>
  return %r : memref<4xf32>
}

// An entry that passes no memref is left as mlir-runner calls it.
// NOARGS-LABEL: func.func @harness() -> i32
// NOARGS-NOT: llvm.getelementptr
// NOARGS: return %{{.*}} : i32
func.func @harness() -> i32 {
  %zero = arith.constant 0 : i32
  return %zero : i32
}

// MISSING: error: entry function '@missing' not found (or has no body)
