// Each verifier rule of lib/Dialect/Vram, broken once.
// RUN: vram-opt %s -split-input-file -verify-diagnostics

func.func @offload_type_mismatch(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{device tensor type 'tensor<4x8xf32>' does not match the host tensor type '!vram.host<tensor<8x4xf32>>'}}
  %h = vram.offload %x : tensor<4x8xf32> -> !vram.host<tensor<8x4xf32>>
  return
}

// -----

func.func @prefetch_type_mismatch(%h: !vram.host<tensor<4x8xf32>>) {
  // expected-error @+1 {{device tensor type 'tensor<4x8xf16>' does not match the host tensor type '!vram.host<tensor<4x8xf32>>'}}
  %x = vram.prefetch %h : !vram.host<tensor<4x8xf32>> -> tensor<4x8xf16>
  return
}

// -----

func.func @offload_dynamic(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{host tensor needs a static shape, got 'tensor<?x8xf32>'}}
  %h = vram.offload %x : tensor<?x8xf32> -> !vram.host<tensor<?x8xf32>>
  return
}

// -----

// expected-error @+1 {{host tensor needs a static shape, got 'tensor<?xf32>'}}
func.func @host_dynamic(%h: !vram.host<tensor<?xf32>>) {
  return
}

// -----

func.func @recompute_effects() {
  // expected-error @+1 {{is marked 'vram.recompute' but only ops with results and no memory effects can be recomputed}}
  %m = memref.alloc() {vram.recompute} : memref<4xf32>
  return
}

// -----

func.func @recompute_not_unit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'vram.recompute' must be a unit attribute}}
  %r = onnx.Relu(%x) {vram.recompute = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// expected-error @+1 {{'vram.planned_peak' must be a non-negative integer (bytes)}}
func.func @peak_not_integer() attributes {vram.planned_peak = "big"} {
  return
}
