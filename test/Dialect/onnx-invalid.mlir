// Each verifier rule of lib/Dialect/ONNX/ONNXOps.cpp, broken once.
// RUN: vram-opt %s -split-input-file -verify-diagnostics

func.func @constant_element_type() {
  // expected-error @+1 {{value element type differs from the result's}}
  %0 = onnx.Constant() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf64>
  return
}

// -----

func.func @constant_shape() {
  // expected-error @+1 {{value shape differs from the result's}}
  %0 = onnx.Constant() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{group must be positive}}
  %0 = onnx.Conv(%x, %w, %n) {group = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<4x8xf32>, %w: tensor<4x8xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{input X must have rank >= 3 (N x C x D1...)}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<4x8xf32>, tensor<4x8xf32>, none) -> tensor<4x8xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{weight W has rank 3, expected 4}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<1x4x8x8xf32>, tensor<4x4x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_strides_arity(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{strides has 1 values, expected 2}}
  %0 = onnx.Conv(%x, %w, %n) {strides = [2]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x3x3xf32>
  return
}

// -----

func.func @conv_pads_arity(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{pads has 2 values, expected 4}}
  %0 = onnx.Conv(%x, %w, %n) {pads = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_dilations_arity(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{dilations has 3 values, expected 2}}
  %0 = onnx.Conv(%x, %w, %n) {dilations = [1, 1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_auto_pad(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{auto_pad 'SAME' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID}}
  %0 = onnx.Conv(%x, %w, %n) {auto_pad = "SAME"} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_strides_positive(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{strides must be positive}}
  %0 = onnx.Conv(%x, %w, %n) {strides = [0, 1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_dilations_positive(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{dilations must be positive}}
  %0 = onnx.Conv(%x, %w, %n) {dilations = [1, -1]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_pads_negative(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{pads must be non-negative}}
  %0 = onnx.Conv(%x, %w, %n) {pads = [0, 0, -1, 0]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_kernel_shape(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{kernel_shape disagrees with W dimension 3}}
  %0 = onnx.Conv(%x, %w, %n) {kernel_shape = [3, 5]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+1 {{bias B must be 1-d}}
  %0 = onnx.Conv(%x, %w, %b) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4x1xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{input has 3 channels but W expects 2 x group 1}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_group_filters(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{W has 3 filters, not divisible by group 2}}
  %0 = onnx.Conv(%x, %w, %n) {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>, none) -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @conv_bias_size(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{bias B has 5 elements for 4 filters}}
  %0 = onnx.Conv(%x, %w, %b) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<5xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_result_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{result has rank 1, expected 4}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1xf32>
  return
}

// -----

func.func @conv_result_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{result has 5 channels, expected 4}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x5x6x6xf32>
  return
}

// -----

func.func @conv_window_fit(%x: tensor<1x4x2x2xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{window of extent 3 does not fit spatial dimension 0 of size 2}}
  %0 = onnx.Conv(%x, %w, %n) : (tensor<1x4x2x2xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @conv_result_spatial(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{result spatial dimension 0 is 4, expected 3}}
  %0 = onnx.Conv(%x, %w, %n) {strides = [2, 2]} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, none) -> tensor<1x4x4x3xf32>
  return
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{input has 4 channels but W has 3}}
  %0 = onnx.ConvTranspose(%x, %w, %n) : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>, none) -> tensor<1x2x10x10xf32>
  return
}

// -----

func.func @conv_transpose_result_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{result has 2 channels, expected 4}}
  %0 = onnx.ConvTranspose(%x, %w, %n) {group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<1x2x10x10xf32>
  return
}

// -----

func.func @conv_transpose_result_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{result has rank 3, expected 4}}
  %0 = onnx.ConvTranspose(%x, %w, %n) : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, none) -> tensor<2x10x10xf32>
  return
}

// -----

func.func @maxpool_rank(%x: tensor<3x8xf32>) {
  // expected-error @+1 {{input X must have rank >= 3 (N x C x D1...)}}
  %0:2 = onnx.MaxPool(%x) {kernel_shape = [2]} : (tensor<3x8xf32>) -> (tensor<3x4xf32>, none)
  return
}

// -----

func.func @maxpool_kernel_arity(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{kernel_shape has 1 values, expected 2}}
  %0:2 = onnx.MaxPool(%x) {kernel_shape = [2]} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, none)
  return
}

// -----

func.func @maxpool_channels(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{pooling must keep the channel count}}
  %0:2 = onnx.MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]} : (tensor<1x3x8x8xf32>) -> (tensor<1x4x4x4xf32>, none)
  return
}

// -----

func.func @maxpool_result_rank(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{result has rank 3, expected 4}}
  %0:2 = onnx.MaxPool(%x) {kernel_shape = [2, 2]} : (tensor<1x3x8x8xf32>) -> (tensor<3x7x7xf32>, none)
  return
}

// -----

func.func @maxpool_ceil_mode(%x: tensor<1x3x8x8xf32>) {
  // ceil((8 - 3) / 2) + 1 = 4
  // expected-error @+1 {{result spatial dimension 0 is 3, expected 4}}
  %0:2 = onnx.MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1 : i64} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x3x3xf32>, none)
  return
}

// -----

func.func @averagepool_strides(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{strides has 3 values, expected 2}}
  %0 = onnx.AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @batchnorm_rank(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{input X must have rank >= 2 (N x C x ...)}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, none, none)
  return
}

// -----

func.func @batchnorm_scale(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>, %bad: tensor<3xf32>) {
  // expected-error @+1 {{input_mean must be 1-d with 4 elements (one per channel)}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %bad, %s) : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<2x4x8xf32>, none, none)
  return
}

// -----

func.func @batchnorm_inference_stats(%x: tensor<2x4x8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{running_mean is only produced in training mode}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layernorm_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:3 = onnx.LayerNormalization(%x, %s, %n) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>, none) -> (tensor<2x3xf32>, none, none)
  return
}

// -----

func.func @layernorm_scale_rank(%x: tensor<3xf32>, %s: tensor<1x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{Scale has a higher rank than X}}
  %0:3 = onnx.LayerNormalization(%x, %s, %n) : (tensor<3xf32>, tensor<1x3xf32>, none) -> (tensor<3xf32>, none, none)
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = onnx.Softmax(%x) {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operands of MatMul must have rank >= 1}}
  %0 = onnx.MatMul(%a, %b) : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{contraction dimensions differ: A has 3, B has 4}}
  %0 = onnx.MatMul(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{A and B of Gemm must be 2-d}}
  %0 = onnx.Gemm(%a, %b, %n) : (tensor<2x3x4xf32>, tensor<4x5xf32>, none) -> tensor<2x5xf32>
  return
}

// -----

func.func @gemm_contraction(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{contraction dimensions differ: A has 3, B has 5}}
  %0 = onnx.Gemm(%a, %b, %n) : (tensor<2x3xf32>, tensor<5x3xf32>, none) -> tensor<2x3xf32>
  return
}

// -----

func.func @gemm_c_rank(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<1x2x5xf32>) {
  // expected-error @+1 {{C of Gemm must have rank <= 2}}
  %0 = onnx.Gemm(%a, %b, %c) : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<1x2x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = onnx.Flatten(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return
}

// -----

func.func @flatten_negative_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = onnx.Flatten(%x) {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<1x6xf32>
  return
}

// -----

func.func @reshape_shape_rank(%x: tensor<2x3xf32>, %s: tensor<1x2xi64>) {
  // expected-error @+1 {{shape must be a 1-d tensor}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<1x2xi64>) -> tensor<3x2xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{cannot reshape 6 elements into 4}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_perm_size(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm has 3 entries for rank 2}}
  %0 = onnx.Transpose(%x) {perm = [1, 0, 2]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm is not a permutation of the dimensions}}
  %0 = onnx.Transpose(%x) {perm = [1, 1]} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{result dimension 0 does not match input dimension 1}}
  %0 = onnx.Transpose(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_result_rank(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{result has rank 1, expected 3}}
  %0 = onnx.Transpose(%x) {perm = [2, 1, 0]} : (tensor<2x3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{needs at least one input}}
  %0 = onnx.Concat() {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.Concat(%a, %a) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2xf32>) {
  // expected-error @+1 {{inputs must all have rank}}
  %0 = onnx.Concat(%a, %a) {axis = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{inputs differ in dimension 0}}
  %0 = onnx.Concat(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{inputs add up to 6 along the axis, not 5}}
  %0 = onnx.Concat(%a, %a) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @split_axis(%x: tensor<2x6xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:2 = onnx.Split(%x, %n) {axis = 2 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @split_sum(%x: tensor<2x6xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{outputs add up to 5 along the axis, not 6}}
  %0:2 = onnx.Split(%x, %n) {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<2x3xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @split_rank(%x: tensor<2x6xf32>) {
  %n = onnx.NoValue
  // expected-error @+1 {{outputs must all have rank}}
  %0:2 = onnx.Split(%x, %n) {axis = 1 : i64} : (tensor<2x6xf32>, none) -> (tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @gather_indices(%x: tensor<4x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{indices must be integers}}
  %0 = onnx.Gather(%x, %i) : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_scalar(%x: tensor<f32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{data must have rank >= 1}}
  %0 = onnx.Gather(%x, %i) : (tensor<f32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.Gather(%x, %i) {axis = 2 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @unsqueeze_rank(%x: tensor<2x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+1 {{result has a lower rank than the input}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<6xf32>
  return
}

// -----

func.func @unsqueeze_elements(%x: tensor<2x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+1 {{must not change the number of elements}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3x2xf32>
  return
}

// -----

func.func @squeeze_rank(%x: tensor<2x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+1 {{result has a higher rank than the input}}
  %0 = onnx.Squeeze(%x, %a) : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<1x2x3xf32>
  return
}

// -----

func.func @squeeze_elements(%x: tensor<1x2x3xf32>, %a: tensor<1xi64>) {
  // expected-error @+1 {{must not change the number of elements}}
  %0 = onnx.Squeeze(%x, %a) : (tensor<1x2x3xf32>, tensor<1xi64>) -> tensor<3x3xf32>
  return
}
