// vram-gpu-overlap-copies: a plan's offload and prefetch (gpu.memcpy between
// the device arena and the pinned host arena, as vram-gpu-device-memory
// leaves them) become copies on the runtime's copy stream, and the host
// waits for each right before the first later op that touches bytes either
// side may share; the kernels in between run during the copy. Other copies
// stay stream-ordered.
// RUN: vram-opt %s --vram-gpu-overlap-copies | FileCheck %s

#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @main
func.func @main(%arg: memref<64xf32>) -> memref<64xf32> {
  %cst = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %pinned = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
  %pcast = memref.cast %pinned : memref<512xi8> to memref<*xi8>
  gpu.host_register %pcast : memref<*xi8>
  %arena = gpu.alloc () : memref<768xi8>
  // The argument's copy in is no plan's: it stays.
  // CHECK: gpu.memcpy
  %in = gpu.alloc () : memref<64xf32>
  gpu.memcpy %in, %arg : memref<64xf32>, memref<64xf32>
  %a = memref.view %arena[%c0][] : memref<768xi8> to memref<64xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%in : memref<64xf32>) outs(%a : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  // Offload A (arena bytes 0-255) to host bytes 0-255: 64 x 4 = 256 bytes.
  // CHECK: %[[H:.*]] = memref.view %[[PINNED:.*]][%c0{{.*}}] : memref<512xi8> to memref<64xf32>
  // CHECK: %[[OUT:.*]] = call @vramRuntimeOffloadAsync({{.*}}, %c256_i64, {{.*}}) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
  %h = memref.view %pinned[%c0][] : memref<512xi8> to memref<64xf32>
  gpu.memcpy %h, %a : memref<64xf32>, memref<64xf32>
  // B (bytes 256-511) shares nothing with it: it runs during the copy.
  // CHECK-NEXT: %[[B:.*]] = memref.view {{.*}}[%c256{{.*}}]
  // CHECK-NEXT: linalg.generic
  // CHECK-SAME: outs(%[[B]] : memref<64xf32>)
  %b = memref.view %arena[%c256][] : memref<768xi8> to memref<64xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%in : memref<64xf32>) outs(%b : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  }
  // Prefetch into C (bytes 512-767) from the host copy, issued before
  // the kernel writing D, which reuses bytes 128-383: A's and B's.
  // CHECK: %[[BACK:.*]] = call @vramRuntimePrefetchAsync({{.*}}, %c256_i64{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
  %c = memref.view %arena[%c512][] : memref<768xi8> to memref<64xf32>
  gpu.memcpy %c, %h : memref<64xf32>, memref<64xf32>
  // The offload must be done before D overwrites A's bytes.
  // CHECK-NEXT: %[[D:.*]] = memref.view {{.*}}[%c128{{.*}}]
  // CHECK-NEXT: call @vramRuntimeFinishCopy(%[[OUT]])
  // CHECK-NEXT: linalg.generic
  // CHECK-SAME: outs(%[[D]] : memref<64xf32>)
  %d = memref.view %arena[%c128][] : memref<768xi8> to memref<64xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%in : memref<64xf32>) outs(%d : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %cst : f32
    linalg.yield %s : f32
  }
  // The prefetch must be done before C's first reader.
  // CHECK: call @vramRuntimeFinishCopy(%[[BACK]])
  // CHECK-NEXT: linalg.generic
  // CHECK-SAME: ins(%{{.*}}, %{{.*}} : memref<64xf32>, memref<64xf32>)
  %out = gpu.alloc () : memref<64xf32>
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%c, %d : memref<64xf32>, memref<64xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  gpu.dealloc %arena : memref<768xi8>
  gpu.host_unregister %pcast : memref<*xi8>
  memref.dealloc %pinned : memref<512xi8>
  %result = memref.alloc() : memref<64xf32>
  // CHECK: gpu.memcpy
  gpu.memcpy %result, %out : memref<64xf32>, memref<64xf32>
  gpu.dealloc %out : memref<64xf32>
  gpu.dealloc %in : memref<64xf32>
  // CHECK-NOT: gpu.memcpy
  // CHECK: return
  return %result : memref<64xf32>
}

// A copy with nothing after it that shares its bytes waits before the
// release of the host arena.
// CHECK-LABEL: func.func @tail
// CHECK: %[[E:.*]] = call @vramRuntimeOffloadAsync
// CHECK-NEXT: call @vramRuntimeFinishCopy(%[[E]])
// CHECK-NEXT: gpu.host_unregister
func.func @tail() {
  %c0 = arith.constant 0 : index
  %pinned = memref.alloc() : memref<256xi8>
  %pcast = memref.cast %pinned : memref<256xi8> to memref<*xi8>
  gpu.host_register %pcast : memref<*xi8>
  %arena = gpu.alloc () : memref<256xi8>
  %a = memref.view %arena[%c0][] : memref<256xi8> to memref<64xf32>
  %h = memref.view %pinned[%c0][] : memref<256xi8> to memref<64xf32>
  gpu.memcpy %h, %a : memref<64xf32>, memref<64xf32>
  gpu.host_unregister %pcast : memref<*xi8>
  memref.dealloc %pinned : memref<256xi8>
  gpu.dealloc %arena : memref<256xi8>
  return
}
