// Errors of --vram-verify-plan on hand-written plans.
// RUN: vram-opt %s --split-input-file --vram-verify-plan -verify-diagnostics

// The function's own budget (3,000 B) is checked. x, a, b and c are 1,024 B:
//   relu x+a 2,048; exp x+a+b 3,072 > 3,000 (first op over); neg x+b+c 3,072.
func.func @over_budget(%x: tensor<256xf32>) -> tensor<256xf32>
    attributes {vram.budget = 3000 : i64} {
  %a = onnx.Relu(%x) : (tensor<256xf32>) -> tensor<256xf32>
  // expected-error @+2 {{live bytes 3,072 exceed the budget of 3,000 bytes here}}
  // expected-note @+1 {{the peak is 3,072 bytes}}
  %b = onnx.Exp(%a) : (tensor<256xf32>) -> tensor<256xf32>
  %c = onnx.Neg(%b) : (tensor<256xf32>) -> tensor<256xf32>
  return %c : tensor<256xf32>
}

// -----

// A host value that neither an offload nor the caller (an argument in host
// memory) provides has no plan behind it.
func.func @prefetch_from_elsewhere(%x: tensor<256xf32>) -> tensor<256xf32> {
  %h = builtin.unrealized_conversion_cast %x : tensor<256xf32> to !vram.host<tensor<256xf32>>
  // expected-error @+1 {{reads a host value that no vram.offload made and no argument passes}}
  %a = vram.prefetch %h : !vram.host<tensor<256xf32>> -> tensor<256xf32>
  return %a : tensor<256xf32>
}

// -----

// An argument the caller passes in host memory comes in by a prefetch.
func.func @prefetch_from_argument(%h: !vram.host<tensor<256xf32>>) -> tensor<256xf32> {
  %a = vram.prefetch %h : !vram.host<tensor<256xf32>> -> tensor<256xf32>
  return %a : tensor<256xf32>
}

// -----

// Within budget (x+a+host 0+p = 3,072 <= 3,072): no error.
func.func @within_budget(%x: tensor<256xf32>) -> tensor<256xf32>
    attributes {vram.budget = 3072 : i64} {
  %a = onnx.Relu(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %h = vram.offload %a : tensor<256xf32> -> !vram.host<tensor<256xf32>>
  %p = vram.prefetch %h : !vram.host<tensor<256xf32>> -> tensor<256xf32>
  %s = onnx.Add(%p, %x) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  return %s : tensor<256xf32>
}
