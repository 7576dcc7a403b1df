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

// -----

// expected-error @+1 {{'vram.no_library_workspace' must be a unit attribute}}
func.func @workspace_flag_not_unit() attributes {vram.no_library_workspace = true} {
  return
}

// -----

func.func @update_unknown_rule(%p: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{unknown update rule 'nadam' (sgd, momentum, adam or adamw)}}
  %r = vram.update nadam %g into %p {learning_rate = 1.0 : f64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @update_state_count(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{rule 'adam' updates 3 tensors (the parameter and its state), got 1}}
  %r = vram.update adam %g step %t into %p {learning_rate = 1.0 : f64} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return
}

// -----

func.func @update_step_missing(%p: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{rule 'adamw' needs step count}}
  %r:3 = vram.update adamw %g into %p, %m, %v {learning_rate = 1.0 : f64} : tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_step_extra(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{rule 'sgd' takes no step count}}
  %r = vram.update sgd %g step %t into %p {learning_rate = 1.0 : f64} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return
}

// -----

func.func @update_accumulate_sum_missing(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{rule 'sgd' updates 2 tensors (the parameter, its state and the accumulated gradient), got 1}}
  %r = vram.update sgd %g step %t into %p {learning_rate = 1.0 : f64, accumulate = 2 : i64} : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return
}

// -----

func.func @update_accumulate_step_missing(%p: tensor<4xf32>, %a: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{rule 'sgd' with accumulate needs step count}}
  %r:2 = vram.update sgd %g into %p, %a {learning_rate = 1.0 : f64, accumulate = 2 : i64} : tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_accumulate_zero(%p: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{accumulate must be at least 1, got 0}}
  %r = vram.update sgd %g into %p {learning_rate = 1.0 : f64, accumulate = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @update_dynamic(%p: tensor<?xf32>, %g: tensor<?xf32>) {
  // expected-error @+1 {{the parameter must be a statically shaped floating-point tensor, got 'tensor<?xf32>'}}
  %r = vram.update sgd %g into %p {learning_rate = 1.0 : f64} : tensor<?xf32> -> tensor<?xf32>
  return
}

// -----

func.func @update_state_type(%p: tensor<4xf32>, %v: tensor<4xf16>, %g: tensor<4xf32>) {
  // expected-error @+1 {{optimizer state of type 'tensor<4xf16>' does not match 'tensor<4xf32>'}}
  %r:2 = vram.update momentum %g into %p, %v {learning_rate = 1.0 : f64} : tensor<4xf32> -> tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// Master weights are the f32 copy of a half parameter, and so is its state.
func.func @update_master_state_type(%p: tensor<4xf16>, %w: tensor<4xf32>, %v: tensor<4xf16>, %g: tensor<4xf16>) {
  // expected-error @+1 {{optimizer state of type 'tensor<4xf16>' does not match 'tensor<4xf32>'}}
  %r:3 = vram.update momentum %g into %p, %w, %v {learning_rate = 1.0 : f64, master} : tensor<4xf16> -> tensor<4xf16>, tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @update_master_f32(%p: tensor<4xf32>, %w: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{master weights need a half-precision parameter, got 'tensor<4xf32>'}}
  %r:2 = vram.update sgd %g into %p, %w {learning_rate = 1.0 : f64, master} : tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @update_master_missing(%p: tensor<4xf16>, %g: tensor<4xf16>) {
  // expected-error @+1 {{rule 'sgd' updates 2 tensors (the parameter, its master weights and its state), got 1}}
  %r = vram.update sgd %g into %p {learning_rate = 1.0 : f64, master} : tensor<4xf16> -> tensor<4xf16>
  return
}

// -----

func.func @update_gradient_type(%p: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{gradient of type 'tensor<8xf32>' does not match the parameter's type 'tensor<4xf32>'}}
  %r = vram.update sgd %g into %p {learning_rate = 1.0 : f64} : tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// The memory analysis' attributes are enums the dialect checks: a typo in a
// value or a name is an error, not a parameter silently counted as state.
// expected-error @+2 {{expected ::vram::ParamKind to be one of: trainable, state, optimizer_state, gradient}}
// expected-error @+1 {{failed to parse Vram_ParamKindAttr parameter 'value'}}
func.func @param_typo(%w: tensor<4xf32> {vram.param = #vram.param<trainabel>}) {
  return
}

// -----

// expected-error @+1 {{argument 0: 'vram.param' must be #vram.param<trainable>, <state>, <optimizer_state> or <gradient>}}
func.func @param_string(%w: tensor<4xf32> {vram.param = "trainable"}) {
  return
}

// -----

// expected-error @+1 {{argument 0 has unknown attribute 'vram.parm' of the vram dialect}}
func.func @param_name_typo(%w: tensor<4xf32> {vram.parm = #vram.param<trainable>}) {
  return
}

// -----

func.func @phase_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'vram.phase' must be #vram.phase<backward> or #vram.phase<optimizer>}}
  %y = onnx.Relu(%x) {vram.phase = "backward"} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @category_of_phase(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'vram.category' must be a memory category, e.g. #vram.category<gradient>}}
  %y = onnx.Relu(%x) {vram.category = #vram.phase<backward>} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @param_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'vram.param' belongs on a function argument}}
  %y = onnx.Relu(%x) {vram.param = #vram.param<state>} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has unknown attribute 'vram.recomputed' of the vram dialect}}
  %y = onnx.Relu(%x) {vram.recomputed} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
