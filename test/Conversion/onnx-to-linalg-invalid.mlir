// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg -verify-diagnostics

// An operator without a dedicated op is named, with its ONNX node.
func.func @unknown_operator(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @unknown {{cannot lower 'onnx.Node' to linalg: ONNX operator 'Celu' (node 'celu_1')}}
  %0 = onnx.Node "Celu"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("celu_1")
  return %0 : tensor<4xf32>
}

// -----

// Every unlowerable op is reported in one run; the Relu between them lowers.
func.func @two_unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Node' to linalg: ONNX operator 'Celu' of domain 'ai.onnx.ml'}}
  %0 = onnx.Node "Celu"(%x) {domain = "ai.onnx.ml"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = onnx.Relu(%0) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{cannot lower 'onnx.Node' to linalg: ONNX operator 'Shrink'}}
  %2 = onnx.Node "Shrink"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+2 {{'onnx.Relu' op cannot be lowered to linalg: operand #0 has type 'tensor<?x4xf32>'; only static shapes are supported}}
  // expected-error @+1 {{cannot lower 'onnx.Relu' to linalg}}
  %0 = onnx.Relu(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @sqrt_of_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+2 {{cannot be lowered to linalg: expects floating-point elements, got 'i32'}}
  // expected-error @+1 {{cannot lower 'onnx.Sqrt' to linalg}}
  %0 = onnx.Sqrt(%x) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Axes computed at run time, keepdims=0, and 2x2 -> 2: dimension 0 or 1
// may have gone, which give different sums.
func.func @reduce_sum_computed_axes(%x: tensor<2x2xf32>, %axes: tensor<1xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{cannot be lowered to linalg: axes must be a constant: the result type 'tensor<2xf32>' does not say which dimensions of 'tensor<2x2xf32>' are reduced}}
  // expected-error @+1 {{cannot lower 'onnx.ReduceSum' to linalg}}
  %0 = onnx.ReduceSum(%x, %axes) {keepdims = 0 : i64} : (tensor<2x2xf32>, tensor<1xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reshape_mismatch(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %shape = onnx.Constant() {value = dense<[3, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error @+2 {{shape operand gives 'tensor<3x2xf32>', the result type is 'tensor<6xf32>'}}
  // expected-error @+1 {{cannot lower 'onnx.Reshape' to linalg}}
  %0 = onnx.Reshape(%x, %shape) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// Scales given at run time: the source coordinates depend on their values,
// not only on the sizes the result type fixes.
func.func @resize_computed_scales(%x: tensor<1x1x2x2xf32>, %scales: tensor<4xf32>) -> tensor<1x1x4x4xf32> {
  %none = onnx.NoValue
  // expected-error @+2 {{'scales' must be a constant}}
  // expected-error @+1 {{cannot lower 'onnx.Resize' to linalg}}
  %0 = onnx.Resize(%x, %none, %scales, %none) {mode = "cubic"} : (tensor<1x1x2x2xf32>, none, tensor<4xf32>, none) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}
