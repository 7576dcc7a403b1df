// A plan's offload and prefetch on the GPU path: the offloaded tensor goes
// to page-locked host memory and comes back into a fresh device buffer, by
// copies on the runtime's copy stream (docs/gpu.md, "Offload and
// prefetch").
// RUN: vram-opt %s --vram-convert-vram-to-bufferization="host-memory-space=vram.pinned_host" | FileCheck %s --check-prefix=TENSOR
// RUN: vram-opt %s --pass-pipeline='builtin.module(vram-convert-vram-to-bufferization{host-memory-space=vram.pinned_host},vram-lower-to-buffers,canonicalize,func.func(vram-static-arena,vram-gpu-device-memory))' | FileCheck %s --check-prefix=MEM
// RUN: vram-opt %s --vram-lower-to-gpu | FileCheck %s --check-prefix=HOST

// The offload's copy is a host tensor: the memory space is its encoding
// and its buffer's; the prefetch's copy names the default space (0).
// TENSOR-LABEL: func.func @main
// TENSOR: %[[A:.*]] = onnx.Neg
// TENSOR: %[[HB:.*]] = bufferization.alloc_tensor() {memory_space = "vram.pinned_host"} : tensor<64xf32, "vram.pinned_host">
// TENSOR: %[[H:.*]] = bufferization.materialize_in_destination %[[A]] in %[[HB]] : (tensor<64xf32>, tensor<64xf32, "vram.pinned_host">) -> tensor<64xf32, "vram.pinned_host">
// TENSOR: %[[DB:.*]] = bufferization.alloc_tensor() {memory_space = 0 : i64} : tensor<64xf32>
// TENSOR: bufferization.materialize_in_destination %[[H]] in %[[DB]] : (tensor<64xf32, "vram.pinned_host">, tensor<64xf32>) -> tensor<64xf32>
// TENSOR-NOT: vram.{{offload|prefetch}}

// The host buffer gets an arena of its own (64 x 4 B = 256 B), a malloc the
// device-memory pass pins. The device arena has two 256-B slots: Neg's
// result A (slot 0) is free once its copy has left, and Relu and Mul, one
// loop nest since Mul runs right after Relu (vram-fuse-elementwise-ops),
// write their result C in its place, which is what the offload was for.
// The prefetched copy takes slot 1 while C is live. Add runs after the
// prefetch, not right after Mul: it stays a loop nest of its own. Its
// result is returned: a buffer of its own.
// MEM-LABEL: func.func @main
// MEM: %[[PINNED:.*]] = memref.alloc() {alignment = 256 : i64} : memref<256xi8>
// MEM: %[[CAST:.*]] = memref.cast %[[PINNED]] : memref<256xi8> to memref<*xi8>
// MEM: gpu.host_register %[[CAST]]
// MEM: %[[DEVARENA:.*]] = gpu.alloc () : memref<512xi8>
// MEM: %[[A:.*]] = memref.view %[[DEVARENA]][%c0{{.*}}] : memref<512xi8> to memref<64xf32>
// MEM: outs(%[[A]] : memref<64xf32>)
// MEM: arith.negf
// MEM: %[[HVIEW:.*]] = memref.view %[[PINNED]]
// MEM: gpu.memcpy %[[HVIEW]], %[[A]] : memref<64xf32>, memref<64xf32>
// MEM: %[[C:.*]] = memref.view %[[DEVARENA]][%c0{{.*}}] : memref<512xi8> to memref<64xf32>
// MEM: outs(%[[C]] : memref<64xf32>)
// MEM: arith.maximumf
// MEM-NEXT: arith.mulf
// MEM: %[[BACK:.*]] = memref.view %[[DEVARENA]][%c256{{.*}}] : memref<512xi8> to memref<64xf32>
// MEM: gpu.memcpy %[[BACK]], %[[HVIEW]] : memref<64xf32>, memref<64xf32>
// MEM: ins(%[[BACK]], %[[C]] :
// MEM-NEXT: ^bb0
// MEM-NEXT: arith.addf
// MEM: gpu.dealloc %[[DEVARENA]] : memref<512xi8>
// MEM: %[[CAST2:.*]] = memref.cast %[[PINNED]]
// MEM: gpu.host_unregister %[[CAST2]]
// MEM: memref.dealloc %[[PINNED]] : memref<256xi8>
// MEM-NOT: pinned_host

// Host code: pin; after the kernel that computes A (and a wait for the
// compute stream), A's copy to the host starts on the copy stream
// (vram-gpu-overlap-copies) and is waited for before the next kernel,
// which reuses its bytes; the copy back starts after that kernel and is
// waited for before the kernel that reads it; then unpin, free. Here
// nothing runs between a copy and its wait: the arena gives the offloaded
// bytes to the very next kernel, and Add reads the prefetch at once.
// HOST-LABEL: llvm.func @main
// HOST: %[[PTR:.*]] = llvm.call @malloc
// HOST: llvm.call @mgpuMemHostRegisterMemRef
// HOST: gpu.launch_func {{.*}} @vram_kernels::@main_kernel blocks
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: %[[OUT:.*]] = llvm.call @vramRuntimeOffloadAsync(
// HOST: llvm.call @vramRuntimeFinishCopy(%[[OUT]])
// HOST: gpu.launch_func {{.*}} @vram_kernels::@main_kernel_0 blocks
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: %[[BACK:.*]] = llvm.call @vramRuntimePrefetchAsync(
// HOST: llvm.call @vramRuntimeFinishCopy(%[[BACK]])
// HOST: gpu.launch_func {{.*}} @vram_kernels::@main_kernel_1 blocks
// HOST: llvm.call @mgpuStreamSynchronize
// HOST: llvm.call @mgpuMemHostUnregisterMemRef
// HOST: llvm.call @free(%[[PTR]])
func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = onnx.Neg(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %h = vram.offload %a : tensor<64xf32> -> !vram.host<tensor<64xf32>>
  %b = onnx.Relu(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %c = onnx.Mul(%b, %b) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %a1 = vram.prefetch %h : !vram.host<tensor<64xf32>> -> tensor<64xf32>
  %d = onnx.Add(%a1, %c) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %d : tensor<64xf32>
}

// A planned step's host argument and host result (a parameter the plan
// keeps in host memory, and its update): both are host memory of the
// caller's. The argument is not copied to the device at entry (only %G
// is); the prefetch copies from the caller's buffer into the device arena;
// the offloaded result is a pinned host buffer returned as it is: no copy
// to a device buffer and back, unpinned at the return and not freed.
// MEM-LABEL: func.func @host_boundary
// MEM-SAME: (%[[P:.*]]: memref<64xf32>, %[[G:.*]]: memref<64xf32>) -> memref<64xf32>
// MEM-NEXT: %[[GDEV:.*]] = gpu.alloc () : memref<64xf32>
// MEM-NEXT: gpu.memcpy %[[GDEV]], %[[G]]
// MEM-NEXT: %[[ARENA:.*]] = gpu.alloc () : memref<512xi8>
// MEM: %[[IN:.*]] = memref.view %[[ARENA]]
// MEM-NEXT: gpu.memcpy %[[IN]], %[[P]]
// MEM: arith.subf
// MEM: %[[OUT:.*]] = memref.alloc() {{.*}} : memref<64xf32>
// MEM: gpu.host_register
// MEM-NEXT: gpu.memcpy %[[OUT]], %{{.*}} : memref<64xf32>, memref<64xf32>
// MEM-NOT: memref.dealloc %[[OUT]]
// MEM: gpu.host_unregister
// MEM-NEXT: return %[[OUT]] : memref<64xf32>
func.func @host_boundary(%p: !vram.host<tensor<64xf32>>, %g: tensor<64xf32>) -> !vram.host<tensor<64xf32>> {
  %d = vram.prefetch %p : !vram.host<tensor<64xf32>> -> tensor<64xf32>
  %n = onnx.Sub(%d, %g) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %h = vram.offload %n : tensor<64xf32> -> !vram.host<tensor<64xf32>>
  return %h : !vram.host<tensor<64xf32>>
}
