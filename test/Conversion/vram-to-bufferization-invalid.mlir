// A host value carried through an op the pass cannot retype is an error.
// RUN: vram-opt %s --vram-convert-vram-to-bufferization -verify-diagnostics

func.func @branch_host(%x: tensor<4xf32>) -> tensor<4xf32> {
  %h = vram.offload %x : tensor<4xf32> -> !vram.host<tensor<4xf32>>
  // expected-error @+1 {{failed to legalize operation 'cf.br'}}
  cf.br ^next(%h : !vram.host<tensor<4xf32>>)
^next(%arg: !vram.host<tensor<4xf32>>):
  %d = vram.prefetch %arg : !vram.host<tensor<4xf32>> -> tensor<4xf32>
  return %d : tensor<4xf32>
}
