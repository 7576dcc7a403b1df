// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// The lowered IR must also bufferize (one buffer per tensor, no copies left
// to resolve by hand).
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" -o /dev/null

// Numpy broadcasting is an indexing map: the 3-vector is read at (d1),
// not copied to 2x3.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: %[[INIT:.+]] = tensor.empty() : tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: arith.addf
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = onnx.Add(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A size-1 dimension broadcast against 4 reads index 0.
// CHECK-DAG: #[[ZERO:.+]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @mul_unit_dim
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[ZERO]], #{{.+}}]
// CHECK: arith.muli
func.func @mul_unit_dim(%a: tensor<4x5xi32>, %b: tensor<1x5xi32>) -> tensor<4x5xi32> {
  %0 = onnx.Mul(%a, %b) : (tensor<4x5xi32>, tensor<1x5xi32>) -> tensor<4x5xi32>
  return %0 : tensor<4x5xi32>
}

// -----

// Integer division truncates toward zero: divsi for signed, divui for
// unsigned, whose tensors become signless at the function boundary.
// CHECK-LABEL: func.func @div_signed
// CHECK: arith.divsi
// CHECK-LABEL: func.func @div_unsigned
// CHECK-SAME: (%{{.+}}: tensor<4xi32>, %{{.+}}: tensor<4xi32>) -> tensor<4xi32>
// CHECK: arith.divui
func.func @div_signed(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = onnx.Div(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @div_unsigned(%a: tensor<4xui32>, %b: tensor<4xui32>) -> tensor<4xui32> {
  %0 = onnx.Div(%a, %b) : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  return %0 : tensor<4xui32>
}

// -----

// Gelu (approximate = none) is 0.5 x (1 + erf(x / sqrt(2))),
// 1/sqrt(2) = 0.70710678...; the tanh form uses sqrt(2/pi) = 0.79788456...
// and 0.044715.
// CHECK-LABEL: func.func @gelu
// CHECK: arith.constant 0.707106769 : f32
// CHECK: math.erf
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
// CHECK: arith.constant 5.000000e-01 : f32
func.func @gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = onnx.Gelu(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = onnx.Gelu(%x) {approximate = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Clip with an absent min: only the upper bound, read from a 0-d tensor.
// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @clip_max_only
// CHECK-NOT: onnx.NoValue
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[SCALAR]], #{{.+}}]
// CHECK-NOT: arith.maximumf
// CHECK: arith.minimumf
// CHECK-NOT: arith.maximumf
func.func @clip_max_only(%x: tensor<4xf32>, %hi: tensor<f32>) -> tensor<4xf32> {
  %none = onnx.NoValue
  %0 = onnx.Clip(%x, %none, %hi) : (tensor<4xf32>, none, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Clip on uint8 compares unsigned.
// CHECK-LABEL: func.func @clip_unsigned
// CHECK: arith.maxui
// CHECK: arith.minui
func.func @clip_unsigned(%x: tensor<4xui8>, %lo: tensor<ui8>, %hi: tensor<ui8>) -> tensor<4xui8> {
  %0 = onnx.Clip(%x, %lo, %hi) : (tensor<4xui8>, tensor<ui8>, tensor<ui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// Cast: float to int truncates (fptosi), unsigned to float is uitofp,
// anything to bool is "!= 0", f16 <-> bf16 goes through f32.
// CHECK-LABEL: func.func @cast_f32_i32
// CHECK: arith.fptosi %{{.+}} : f32 to i32
// CHECK-LABEL: func.func @cast_u8_f32
// CHECK: arith.uitofp %{{.+}} : i8 to f32
// CHECK-LABEL: func.func @cast_f32_bool
// CHECK: arith.cmpf une
// CHECK-LABEL: func.func @cast_bf16_f16
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK-LABEL: func.func @cast_i8_i64
// CHECK: arith.extsi %{{.+}} : i8 to i64
func.func @cast_f32_i32(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = onnx.Cast(%x) {to = 6 : i64} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @cast_u8_f32(%x: tensor<4xui8>) -> tensor<4xf32> {
  %0 = onnx.Cast(%x) {to = 1 : i64} : (tensor<4xui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @cast_f32_bool(%x: tensor<4xf32>) -> tensor<4xi1> {
  %0 = onnx.Cast(%x) {to = 9 : i64} : (tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}
func.func @cast_bf16_f16(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %0 = onnx.Cast(%x) {to = 10 : i64} : (tensor<4xbf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
func.func @cast_i8_i64(%x: tensor<4xi8>) -> tensor<4xi64> {
  %0 = onnx.Cast(%x) {to = 7 : i64} : (tensor<4xi8>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Where broadcasts all three operands.
// CHECK-LABEL: func.func @where
// CHECK: linalg.generic
// CHECK-SAME: ins(%arg0, %arg1, %arg2 : tensor<2x1xi1>, tensor<3xf32>, tensor<f32>)
// CHECK: arith.select
func.func @where(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %0 = onnx.Where(%c, %x, %y) : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A float base with an integer exponent keeps (-2)^3 = -8 exact: fpowi.
// CHECK-LABEL: func.func @pow_int_exponent
// CHECK: math.fpowi
// CHECK-LABEL: func.func @pow_float
// CHECK: math.powf
func.func @pow_int_exponent(%x: tensor<4xf32>, %y: tensor<4xi64>) -> tensor<4xf32> {
  %0 = onnx.Pow(%x, %y) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @pow_float(%x: tensor<4xf32>, %y: tensor<f32>) -> tensor<4xf32> {
  %0 = onnx.Pow(%x, %y) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// HardSwish = x * max(0, min(1, x/6 + 1/2)); LeakyRelu selects alpha * x
// below zero; Sigmoid is 1 / (1 + exp(-x)).
// CHECK-LABEL: func.func @activations
// CHECK: arith.constant 0.166666672 : f32
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: arith.mulf
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
func.func @activations(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = onnx.HardSwish(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = onnx.LeakyRelu(%x) {alpha = 0.1 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = onnx.Sigmoid(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
