// Conv and pooling forms the linalg lowering refuses, each with its reason.
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg -verify-diagnostics

func.func @conv_dynamic(%x: tensor<?x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<?x8x6x6xf32> {
  %n = onnx.NoValue
  // expected-error @+2 {{'onnx.Conv' op cannot be lowered to linalg: operand #0 has type 'tensor<?x4x8x8xf32>'; only static shapes are supported}}
  // expected-error @+1 {{cannot lower 'onnx.Conv' to linalg}}
  %y = onnx.Conv(%x, %w, %n) : (tensor<?x4x8x8xf32>, tensor<8x4x3x3xf32>, none) -> tensor<?x8x6x6xf32>
  return %y : tensor<?x8x6x6xf32>
}

// -----

// Pads [0, 3] of a 2-wide window with count_include_pad = 0 on 4 elements:
// (4 + 3 - 2) + 1 = 6 windows; the one at 4 covers [4, 6), outside [0, 4).
func.func @average_pool_empty_window(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+2 {{'onnx.AveragePool' op cannot be lowered to linalg: window 4 of spatial dimension 0 covers no input element}}
  // expected-error @+1 {{cannot lower 'onnx.AveragePool' to linalg}}
  %y = onnx.AveragePool(%x) {kernel_shape = [2, 2], pads = [0, 0, 3, 3]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x6x6xf32>
  return %y : tensor<1x1x6x6xf32>
}

// -----

// 4 spatial dims: linalg has no 4-d convolution.
func.func @conv_4d(%x: tensor<1x1x3x3x3x3xf32>, %w: tensor<1x1x2x2x2x2xf32>) -> tensor<1x1x2x2x2x2xf32> {
  %n = onnx.NoValue
  // expected-error @+2 {{'onnx.Conv' op cannot be lowered to linalg: 4-d convolution is not supported (1-d to 3-d)}}
  // expected-error @+1 {{cannot lower 'onnx.Conv' to linalg}}
  %y = onnx.Conv(%x, %w, %n) : (tensor<1x1x3x3x3x3xf32>, tensor<1x1x2x2x2x2xf32>, none) -> tensor<1x1x2x2x2x2xf32>
  return %y : tensor<1x1x2x2x2x2xf32>
}
