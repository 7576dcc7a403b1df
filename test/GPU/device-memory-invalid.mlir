// RUN: vram-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(vram-gpu-device-memory))'

func.func @stack(%x: memref<4xf32>) {
  // expected-error @+1 {{stack allocation (memref.alloca) outside a kernel cannot be placed in device memory}}
  %t = memref.alloca() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
  return
}

// -----

// expected-error @+1 {{argument of type 'memref<4xf32, strided<[2]>>' is not contiguous}}
func.func @strided_argument(%x: memref<4xf32, strided<[2]>>) {
  return
}

// -----

func.func private @use(memref<4xf32>)

func.func @leak_in_loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{allocation outside the function's entry block is never freed}}
    %t = memref.alloc() : memref<4xf32>
    func.call @use(%t) : (memref<4xf32>) -> ()
  }
  return
}

// -----

// A host argument (a planned step's) stays in the caller's host memory:
// only copies may read it.
func.func @host_argument_read(%h: memref<4xf32, "vram.pinned_host">, %y: memref<4xf32>) {
  // expected-error @+1 {{a host argument may only be copied (a kernel cannot read host memory)}}
  linalg.copy ins(%h : memref<4xf32, "vram.pinned_host">) outs(%y : memref<4xf32>)
  return
}
