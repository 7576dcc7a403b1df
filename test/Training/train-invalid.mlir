// RUN: vram-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(vram-train)'

// An op without a derivative is an error naming it (and its ONNX node, from
// the NameLoc the importer gives every op).
func.func @main(%x: tensor<2x3xf32>,
                %w: tensor<3x3xf32> {vram.param = #vram.param<trainable>}) -> tensor<2x3xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  // expected-error @below {{'onnx.Node' has no gradient (node 'onnx.Node'): vram-train cannot differentiate it}}
  %1 = onnx.Node "Hardmax"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// expected-error @below {{vram-train: no trainable parameter}}
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = onnx.Relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// expected-error @below {{vram-train needs static shapes}}
func.func @main(%x: tensor<?x3xf32>,
                %w: tensor<3x3xf32> {vram.param = #vram.param<trainable>}) -> tensor<?x3xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
