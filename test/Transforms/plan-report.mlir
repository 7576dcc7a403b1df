// The plan report groups tensors by layer (node-name prefix of two path
// components, as in the memory report) with the bytes kept, recomputed and
// offloaded, and gives each decision the planner's reason.
// RUN: vram-opt %s --vram-plan="budget=1843200 print-plan=true" -o /dev/null | FileCheck %s
// RUN: vram-opt %s --vram-plan="budget=1843200 print-plan=true allow-offload=false" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=NOLINK

// The graph of plan-offload.mlir with torch-style node names. Layers:
// enc/layer1 = {a}, enc/layer2 = {t, u, v}, dec/layer1 = {r, g}, dec/out =
// {h}. Bytes: a, r, g, h 16x16 f32 = 1,024; t, u 16x64 f32 = 4,096; v 16x1
// f32 = 64. So enc/layer2 keeps 4,096 + 4,096 + 64 = 8,256 B and dec/layer1
// 1,024 + 1,024 = 2,048 B. a must leave the device (plan-offload.mlir):
// - with the host link, its 16 ns copies hide behind the 160 ns of compute
//   between its eviction (at u) and g (u, v, r: 157 ns MatMul + ~3 ns), and
//   rebuilding would cost its MatMul, 157 ns: offloaded, no overhead;
// - without, it is recomputed: 157 ns of 711 ns = 22.0% overhead.

// CHECK:      plan @main: {{.*}}; 0 recomputations, 1,024 B offloaded, 0 arguments in host memory (0 B); overhead 0.0% of 711 ns (recompute 0 ns, exposed copies 0 ns) on H100-SXM-80GB
// CHECK-NEXT:   layer enc/layer1: kept 0 B, recomputed 0 B, offloaded 1,024 B
// CHECK-NEXT:     /enc/layer1/MatMul: 1,024 B saved_activation, offloaded 1x: the copies hide behind 160 ns of compute; rebuilding would take 157 ns
// CHECK-NEXT:   layer enc/layer2: kept 8,256 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT:     /enc/layer2/MatMul: 4,096 B activation, kept: the budget allows it
// CHECK-NEXT:     /enc/layer2/Neg: 4,096 B activation, kept: the budget allows it
// CHECK-NEXT:     /enc/layer2/ReduceMean: 64 B saved_activation, kept: the budget allows it
// CHECK-NEXT:   layer dec/layer1: kept 2,048 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT:     /dec/layer1/MatMul: 1,024 B activation, kept: the budget allows it
// CHECK-NEXT:     /dec/layer1/Mul: 1,024 B activation, kept: the budget allows it
// CHECK-NEXT:   layer dec/out: kept 1,024 B, recomputed 0 B, offloaded 0 B
// CHECK-NEXT:     /dec/out/Add: 1,024 B output, kept: output stays to the end

// NOLINK:      plan @main: {{.*}}; 1 recomputations, 0 B offloaded, 0 arguments in host memory (0 B); overhead 22.0% of 711 ns (recompute 157 ns, exposed copies 0 ns) on H100-SXM-80GB
// NOLINK-NEXT:   layer enc/layer1: kept 0 B, recomputed 1,024 B, offloaded 0 B
// NOLINK-NEXT:     /enc/layer1/MatMul: 1,024 B saved_activation, recomputed 1x: 157 ns to rebuild (offload disabled)
func.func @main(%x: tensor<16x4096xf32> {onnx.name = "x"},
                %w: tensor<4096x16xf32> {onnx.name = "w", vram.param = #vram.param<trainable>},
                %wt: tensor<4096x64xf32> {onnx.name = "wt", vram.param = #vram.param<trainable>},
                %w3: tensor<4096x16xf32> {onnx.name = "w3", vram.param = #vram.param<trainable>})
    -> tensor<16x16xf32> {
  %a = onnx.MatMul(%x, %w) : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("/enc/layer1/MatMul")
  %t = onnx.MatMul(%x, %wt) : (tensor<16x4096xf32>, tensor<4096x64xf32>) -> tensor<16x64xf32> loc("/enc/layer2/MatMul")
  %u = onnx.Neg(%t) : (tensor<16x64xf32>) -> tensor<16x64xf32> loc("/enc/layer2/Neg")
  %v = onnx.ReduceMean(%u) {axes = [1], keepdims = 1 : i64} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("/enc/layer2/ReduceMean")
  %r = onnx.MatMul(%x, %w3) {vram.phase = #vram.phase<backward>} : (tensor<16x4096xf32>, tensor<4096x16xf32>) -> tensor<16x16xf32> loc("/dec/layer1/MatMul")
  %g = onnx.Mul(%r, %a) {vram.phase = #vram.phase<backward>} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("/dec/layer1/Mul")
  %h = onnx.Add(%g, %v) {vram.phase = #vram.phase<backward>} : (tensor<16x16xf32>, tensor<16x1xf32>) -> tensor<16x16xf32> loc("/dec/out/Add")
  return %h : tensor<16x16xf32>
}
