// Gradient check of Gelu's tanh approximation, which ONNX only has from
// opset 20 (beyond Debian's libonnx 1.12), so the model is written in the
// onnx dialect directly (see gradcheck-elementwise.test for the method).
// RUN: vram-run %s --train="loss=mse optimizer=none" --gradcheck | FileCheck %s
// CHECK: ok gradient of 'X': 6 elements
func.func @main(%x: tensor<2x3xf64> {onnx.name = "X"}) -> tensor<2x3xf64> {
  %0 = onnx.Gelu(%x) {approximate = "tanh"} : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}
