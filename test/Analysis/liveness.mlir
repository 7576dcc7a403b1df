// RUN: vram-opt %s --split-input-file --vram-print-liveness -o /dev/null \
// RUN:   | FileCheck %s

// A chain: x (4x8xf32 = 128 B) and w (8x16xf32 = 512 B) are live throughout;
// every 4x16xf32 result is 256 B.
//   op 1 MatMul:  128 + 512 + mm 256                 =  896
//   op 2 Relu:    128 + 512 + mm 256 + relu 256      = 1152  <- peak (first)
//   op 3 Softmax: 128 + 512 + relu 256 + softmax 256 = 1152
// CHECK-LABEL: liveness @chain: peak 1152 bytes at op 2
// CHECK-DAG: buffer x input 128 live [1, 3]
// CHECK-DAG: buffer w parameter 512 live [1, 3]
// CHECK-DAG: buffer mm activation 256 live [1, 2]
// CHECK-DAG: buffer relu activation 256 live [2, 3]
// CHECK-DAG: buffer softmax output 256 live [3, 3]
// CHECK: op 1 onnx.MatMul 'mm' live 896
// CHECK: op 2 onnx.Relu 'relu' live 1152
// CHECK: op 3 onnx.Softmax 'softmax' live 1152
func.func @chain(%x: tensor<4x8xf32> {onnx.name = "x"},
                 %w: tensor<8x16xf32> {onnx.name = "w", vram.param = #vram.param<trainable>})
    -> tensor<4x16xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("mm")
  %1 = onnx.Relu(%0) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("relu")
  %2 = onnx.Softmax(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("softmax")
  return %2 : tensor<4x16xf32>
}

// -----

// A view keeps its source alive: Reshape does not copy, so the Relu buffer
// (64 floats = 256 B) lives until the reshaped value's last use at op 6.
// x is 256 B; the shape constant (one i64, 8 B) is program data, live at
// every point, in category state.
//   op 1 Constant: x 256 + shape 8                    = 264
//   op 2 Relu:     264 + relu 256                     = 520
//   op 3 Reshape:  520 (a view: +0)                   = 520
//   op 4 Neg:      520 + neg 256                      = 776
//   op 5 Reshape:  776 (a view: +0)                   = 776
//   op 6 Add:      776 + add 256                      = 1032 <- peak
// CHECK-LABEL: liveness @view: peak 1032 bytes at op 6
// CHECK-DAG: buffer shape state 8 live [1, 6]
// CHECK-DAG: buffer relu activation 256 live [2, 6]
// CHECK-DAG: buffer neg activation 256 live [4, 6]
// CHECK-NOT: buffer reshape
// CHECK: op 3 onnx.Reshape 'reshape' live 520
// CHECK: op 5 onnx.Reshape 'reshape2' live 776
// CHECK: op 6 onnx.Add 'add' live 1032
func.func @view(%x: tensor<8x8xf32> {onnx.name = "x"}) -> tensor<64xf32> {
  %shape = onnx.Constant() {value = dense<[64]> : tensor<1xi64>} : () -> tensor<1xi64> loc("shape")
  %0 = onnx.Relu(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("relu")
  %1 = onnx.Reshape(%0, %shape) : (tensor<8x8xf32>, tensor<1xi64>) -> tensor<64xf32> loc("reshape")
  %2 = onnx.Neg(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("neg")
  %3 = onnx.Reshape(%2, %shape) : (tensor<8x8xf32>, tensor<1xi64>) -> tensor<64xf32> loc("reshape2")
  %4 = onnx.Add(%1, %3) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> loc("add")
  return %4 : tensor<64xf32>
}

// -----

// Destination-passing: linalg results live in their init's storage, so the
// tensor.empty allocates (16 x f32 = 64 B, from op 2) and fill and generic
// write in place. The scalar constant is 0 bytes (not a tensor).
//   op 1 arith.constant: x 64                          =  64
//   op 2 tensor.empty:   64 + empty 64                 = 128
//   op 3 linalg.fill:    128 (in place)                = 128
//   op 4 linalg.generic: 128 (in place)                = 128
// CHECK-LABEL: liveness @destination_passing: peak 128 bytes at op 2
// CHECK-DAG: buffer x input 64 live [1, 4]
// CHECK-DAG: buffer empty output 64 live [2, 4]
// CHECK-NOT: buffer fill
// CHECK-NOT: buffer add
#map = affine_map<(d0) -> (d0)>
func.func @destination_passing(%x: tensor<16xf32> {onnx.name = "x"}) -> tensor<16xf32> {
  %zero = arith.constant 0.0 : f32 loc("zero")
  %e = tensor.empty() : tensor<16xf32> loc("empty")
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32> loc("fill")
  %g = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%f : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<16xf32> loc("add")
  return %g : tensor<16xf32>
}

// -----

// Element storage: sub-byte integers pack (3 x i4 = 12 bits -> 2 B), i1 is
// a byte per element (5 B), complex<f32> is 8 B (2 x 8 = 16 B), f16 and
// bf16 are 2 B (3 x 2 = 6 B each), none (an absent ONNX value) is 0 B.
// CHECK-LABEL: liveness @element_sizes
// CHECK-DAG: buffer a input 2 live
// CHECK-DAG: buffer b input 5 live
// CHECK-DAG: buffer c input 16 live
// CHECK-DAG: buffer d input 6 live
// CHECK-DAG: buffer e input 6 live
// CHECK-DAG: buffer none activation 0 live [1, 1]
func.func @element_sizes(%a: tensor<3xi4> {onnx.name = "a"}, %b: tensor<5xi1> {onnx.name = "b"},
                         %c: tensor<2xcomplex<f32>> {onnx.name = "c"}, %d: tensor<3xf16> {onnx.name = "d"},
                         %e: tensor<3xbf16> {onnx.name = "e"}) {
  %n = onnx.NoValue loc("none")
  return
}

// -----

// Training categories come from attributes: the backward op (vram.phase)
// reads the forward Relu output, which is therefore saved for backward; its
// own result is marked a gradient. A dead result lives only at its op.
// CHECK-LABEL: liveness @training
// CHECK-DAG: buffer w parameter 64 live [1, 4]
// CHECK-DAG: buffer m optimizer_state 64 live [1, 4]
// CHECK-DAG: buffer fwd saved_activation 64 live [1, 3]
// CHECK-DAG: buffer unused activation 64 live [2, 2]
// CHECK-DAG: buffer grad gradient 64 live [3, 4]
func.func @training(%w: tensor<16xf32> {onnx.name = "w", vram.param = #vram.param<trainable>},
                    %m: tensor<16xf32> {onnx.name = "m", vram.param = #vram.param<optimizer_state>})
    -> tensor<16xf32> {
  %0 = onnx.Relu(%w) : (tensor<16xf32>) -> tensor<16xf32> loc("fwd")
  %1 = onnx.Neg(%w) : (tensor<16xf32>) -> tensor<16xf32> loc("unused")
  %2 = onnx.Mul(%0, %m) {vram.phase = #vram.phase<backward>, vram.category = #vram.category<gradient>} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("grad")
  %3 = onnx.Sub(%w, %2) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("update")
  return %3 : tensor<16xf32>
}
