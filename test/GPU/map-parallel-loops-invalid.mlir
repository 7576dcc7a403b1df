// RUN: vram-opt %s --verify-diagnostics --pass-pipeline='builtin.module(func.func(vram-gpu-map-parallel-loops))'
// RUN: not vram-opt %s --pass-pipeline='builtin.module(func.func(vram-gpu-map-parallel-loops{block-size=2048}))' 2>&1 | FileCheck %s --check-prefix=BLOCK

// BLOCK: block-size must be in [1, 1024] (CUDA's limit), got 2048

func.func @host_reads_device(%m: memref<4xindex>) -> index {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{host code uses a value read from device memory; it cannot run in a GPU kernel}}
  %n = memref.load %m[%c0] : memref<4xindex>
  return %n : index
}
