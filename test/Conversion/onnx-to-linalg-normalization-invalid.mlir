// Normalization and Dropout forms the linalg lowering refuses.
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg -verify-diagnostics

func.func @dropout_runtime_mode(%x: tensor<4xf32>, %training: tensor<i1>) -> tensor<4xf32> {
  %n = onnx.NoValue
  // expected-error @+2 {{'onnx.Dropout' op cannot be lowered to linalg: training_mode must be a constant}}
  // expected-error @+1 {{cannot lower 'onnx.Dropout' to linalg}}
  %y, %m = onnx.Dropout(%x, %n, %training) : (tensor<4xf32>, none, tensor<i1>) -> (tensor<4xf32>, none)
  return %y : tensor<4xf32>
}

// -----

func.func @layer_norm_stash_type(%x: tensor<2x4xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  %n = onnx.NoValue
  // expected-error @+2 {{'onnx.LayerNormalization' op cannot be lowered to linalg: stash_type 7 is not a float type}}
  // expected-error @+1 {{cannot lower 'onnx.LayerNormalization' to linalg}}
  %y, %m, %i = onnx.LayerNormalization(%x, %s, %n) {stash_type = 7 : i64} : (tensor<2x4xf32>, tensor<4xf32>, none) -> (tensor<2x4xf32>, none, none)
  return %y : tensor<2x4xf32>
}

// -----

func.func @softmax_dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+2 {{'onnx.Softmax' op cannot be lowered to linalg: operand #0 has type 'tensor<?x4xf32>'; only static shapes are supported}}
  // expected-error @+1 {{cannot lower 'onnx.Softmax' to linalg}}
  %y = onnx.Softmax(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
