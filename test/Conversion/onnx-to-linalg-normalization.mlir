// BatchNormalization, LayerNormalization, Softmax and Dropout lowered to
// linalg on tensors.
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// Inference: Y = (X - mean) / sqrt(var + eps) * scale + B, one elementwise
// generic reading the per-channel vectors through dim 1.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @batch_norm_inference
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[ID]]]
// CHECK-SAME: ins(%arg0, %arg1, %arg2, %arg3, %arg4 :
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[B:.*]]: f32, %[[M:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[C:.*]] = arith.subf %[[X]], %[[M]]
// CHECK: %[[VE:.*]] = arith.addf %[[V]], %[[EPS]]
// CHECK: %[[SD:.*]] = math.sqrt %[[VE]]
// CHECK: %[[N:.*]] = arith.divf %[[C]], %[[SD]]
// CHECK: %[[NS:.*]] = arith.mulf %[[N]], %[[S]]
// CHECK: %[[Y:.*]] = arith.addf %[[NS]], %[[B]]
// CHECK: linalg.yield %[[Y]]
// BUF-LABEL: func.func @batch_norm_inference
// BUF: linalg.generic
// BUF-SAME: outs(%{{.*}} : memref<2x3x4x4xf32>)
func.func @batch_norm_inference(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  %y, %rm, %rv = onnx.BatchNormalization(%x, %s, %b, %m, %v) : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, none, none)
  return %y : tensor<2x3x4x4xf32>
}

// -----

// Training: batch statistics over N, H, W (2 * 4 * 4 = 32 elements per
// channel), population variance; running = input * 0.9 + batch * (1 - 0.9).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @batch_norm_training
// CHECK-DAG: %[[N:.*]] = arith.constant 3.200000e+01 : f32
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%arg0 : tensor<2x3x4x4xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<3xf32>)
// CHECK: arith.divf %{{.*}}, %[[N]]
// CHECK: %[[SQ:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[CH]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK-SAME: ins(%arg0, %[[MEAN]] : tensor<2x3x4x4xf32>, tensor<3xf32>)
// CHECK: %[[D:.*]] = arith.subf
// CHECK: arith.mulf %[[D]], %[[D]]
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<3xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %[[MEAN]], %[[VAR]] :
// CHECK: %[[MOM:.*]] = arith.constant 0.899999976 : f32
// CHECK: %[[REST:.*]] = arith.constant 0.100000024 : f32
// CHECK: %[[RM:.*]] = linalg.generic {{.*}} ins(%arg3, %[[MEAN]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: ^bb0(%[[I:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[K:.*]] = arith.mulf %[[I]], %[[MOM]]
// CHECK: %[[A:.*]] = arith.mulf %[[B]], %[[REST]]
// CHECK: arith.addf %[[K]], %[[A]]
// CHECK: %[[RV:.*]] = linalg.generic {{.*}} ins(%arg4, %[[VAR]] : tensor<3xf32>, tensor<3xf32>)
// CHECK: return %[[Y]], %[[RM]], %[[RV]]
func.func @batch_norm_training(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %rm, %rv = onnx.BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %rm, %rv : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// f16 statistics accumulate in f32 (the ONNX spec's "uses float"); Y goes
// back to f16. Running stats absent: only Y is computed.
// CHECK-LABEL: func.func @batch_norm_training_f16
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<3xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf %{{.*}} : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @batch_norm_training_f16(%x: tensor<2x3xf16>, %s: tensor<3xf16>, %b: tensor<3xf16>, %m: tensor<3xf16>, %v: tensor<3xf16>) -> tensor<2x3xf16> {
  %y, %rm, %rv = onnx.BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1 : i64} : (tensor<2x3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>, tensor<3xf16>) -> (tensor<2x3xf16>, none, none)
  return %y : tensor<2x3xf16>
}

// -----

// axis = -1 on 2x3x4: statistics per (d0, d1) over 4 elements; Mean and
// InvStdDev are 2x3x1; InvStdDev = 1 / sqrt(var + eps).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[STAT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @layer_norm_last_axis
// CHECK: %[[N:.*]] = arith.constant 4.000000e+00 : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[STAT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK: arith.divf %{{.*}}, %[[N]]
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: math.sqrt
// CHECK: arith.divf %[[ONE]]
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[LAST]], #[[LAST]], #[[STAT]], #[[STAT]], #[[ID]]]
// CHECK-SAME: ins(%arg0, %arg1, %arg2, %[[MEAN]], %[[INV]] :
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[B:.*]]: f32, %[[M:.*]]: f32, %[[I:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[C:.*]] = arith.subf %[[X]], %[[M]]
// CHECK: %[[NM:.*]] = arith.mulf %[[C]], %[[I]]
// CHECK: %[[SC:.*]] = arith.mulf %[[NM]], %[[S]]
// CHECK: arith.addf %[[SC]], %[[B]]
// CHECK: %[[M3:.*]] = tensor.expand_shape %[[MEAN]] {{\[\[}}0], [1, 2]] output_shape [2, 3, 1] : tensor<2x3xf32> into tensor<2x3x1xf32>
// CHECK: %[[I3:.*]] = tensor.expand_shape %[[INV]] {{\[\[}}0], [1, 2]] output_shape [2, 3, 1] : tensor<2x3xf32> into tensor<2x3x1xf32>
// CHECK: return %[[Y]], %[[M3]], %[[I3]]
func.func @layer_norm_last_axis(%x: tensor<2x3x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  %y, %m, %i = onnx.LayerNormalization(%x, %s, %b) : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %y, %m, %i : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

// axis = 1, no B, a 1x4 Scale broadcast over 3x4: 3 * 4 = 12 elements per
// statistic; the Scale's size-1 dim reads index 0.
// CHECK-DAG: #[[SCALE:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func.func @layer_norm_broadcast_scale
// CHECK: arith.constant 1.200000e+01 : f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALE]], #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-SAME: ins(%arg0, %arg1, %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<1x4xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK: arith.mulf
// CHECK: %[[R:.*]] = arith.mulf
// CHECK-NEXT: linalg.yield %[[R]]
func.func @layer_norm_broadcast_scale(%x: tensor<2x3x4xf32>, %s: tensor<1x4xf32>) -> tensor<2x3x4xf32> {
  %n = onnx.NoValue
  %y, %m, %i = onnx.LayerNormalization(%x, %s, %n) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<1x4xf32>, none) -> (tensor<2x3x4xf32>, none, none)
  return %y : tensor<2x3x4xf32>
}

// -----

// axis = 0 normalizes everything: a rank-0 statistic, Mean is 1x1.
// CHECK-LABEL: func.func @layer_norm_all_axes
// CHECK: arith.constant 6.000000e+00 : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%arg0 : tensor<2x3xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} iterator_types = []
// CHECK: tensor.expand_shape %[[MEAN]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
func.func @layer_norm_all_axes(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x1xf32>) {
  %n = onnx.NoValue
  %y, %m, %i = onnx.LayerNormalization(%x, %s, %n) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, none) -> (tensor<2x3xf32>, tensor<1x1xf32>, none)
  return %y, %m : tensor<2x3xf32>, tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK: linalg.softmax dimension(1) ins(%arg0 : tensor<2x5x3xf32>) outs(%{{.*}} : tensor<2x5x3xf32>)
// CHECK: linalg.softmax dimension(2) ins(%arg0 : tensor<2x5x3xf32>) outs(%{{.*}} : tensor<2x5x3xf32>)
// BUF-LABEL: func.func @softmax
// BUF: linalg.softmax dimension(1) ins(%{{.*}} : memref<2x5x3xf32
func.func @softmax(%x: tensor<2x5x3xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x3xf32>) {
  %a = onnx.Softmax(%x) {axis = 1 : i64} : (tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %b = onnx.Softmax(%x) : (tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  return %a, %b : tensor<2x5x3xf32>, tensor<2x5x3xf32>
}

// -----

// Without training_mode Dropout is the identity and its mask all true; in
// training mode with ratio 0 it keeps every element too (scale 1 / (1 - 0)).
// CHECK-LABEL: func.func @dropout
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[MASK:.*]] = linalg.fill ins(%[[TRUE]] : i1) outs(%{{.*}} : tensor<4x5xi1>)
// CHECK: return %arg0, %[[MASK]], %arg0
func.func @dropout(%x: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xi1>, tensor<4x5xf32>) {
  %n = onnx.NoValue
  %y, %mask = onnx.Dropout(%x, %n, %n) : (tensor<4x5xf32>, none, none) -> (tensor<4x5xf32>, tensor<4x5xi1>)
  %ratio = arith.constant dense<0.0> : tensor<f32>
  %training = arith.constant dense<true> : tensor<i1>
  %t, %tm = onnx.Dropout(%x, %ratio, %training) : (tensor<4x5xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x5xf32>, none)
  return %y, %mask, %t : tensor<4x5xf32>, tensor<4x5xi1>, tensor<4x5xf32>
}
