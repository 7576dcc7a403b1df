// RUN: vram-opt %s --split-input-file --vram-print-memory -verify-diagnostics -o /dev/null

// expected-error @+1 {{cannot size '%arg0' of type 'tensor<?x8xf32>': its shape is not static}}
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{cannot size 'onnx.Relu' of type 'tensor<?x8xf32>'}}
  %0 = onnx.Relu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

