// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-convert-onnx-to-linalg \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" -o /dev/null

// CHECK-LABEL: func.func @matmul_2d
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.+]] = tensor.empty() : tensor<3x5xf32>
// CHECK: %[[ACC:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<3x5xf32>)
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<4x5xf32>) outs(%[[ACC]] : tensor<3x5xf32>)
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = onnx.MatMul(%a, %b) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// A batch times one weight matrix: the batch folds into the rows (a view),
// 2x3 = 6 rows, one linalg.matmul, then the rows split again.
// CHECK-LABEL: func.func @matmul_batch_weights
// CHECK: %[[A:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[P:.+]] = linalg.matmul ins(%[[A]], %arg1 : tensor<6x4xf32>, tensor<4x5xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
func.func @matmul_batch_weights(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = onnx.MatMul(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Equal batches (2x3 = 6 after collapsing): linalg.batch_matmul.
// CHECK-LABEL: func.func @matmul_batched
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x5xf32> into tensor<6x4x5xf32>
// CHECK: tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x5x7xf32> into tensor<6x5x7xf32>
// CHECK: linalg.batch_matmul
// CHECK-SAME: outs(%{{.+}} : tensor<6x4x7xf32>)
func.func @matmul_batched(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x5x7xf32>) -> tensor<2x3x4x7xf32> {
  %0 = onnx.MatMul(%a, %b) : (tensor<2x3x4x5xf32>, tensor<2x3x5x7xf32>) -> tensor<2x3x4x7xf32>
  return %0 : tensor<2x3x4x7xf32>
}

// -----

// Batches 2x1 and 5 broadcast to 2x5: a generic over (b0, b1, m, n, k) that
// reads A at b1 = 0 and B (padded to 1x5) at b0 = 0, no copies.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, d4, d3)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3]] output_shape [1, 5, 4, 6]
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul_broadcast_batch(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %0 = onnx.MatMul(%a, %b) : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// 1-d operands: a vector is promoted to 1x4 and the unit row dropped again.
// CHECK-LABEL: func.func @matmul_vector
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
// CHECK: linalg.matmul
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<1x5xf32> into tensor<5xf32>
func.func @matmul_vector(%a: tensor<4xf32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  %0 = onnx.MatMul(%a, %b) : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Gemm with transB: the transposition is in linalg.matmul's indexing maps;
// then one generic computes 0.5 * acc + 2 * C with C (a 5-vector) broadcast.
// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[RHS:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gemm
// CHECK: %[[ACC:.+]] = linalg.fill
// CHECK: %[[P:.+]] = linalg.matmul indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]] ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<5x4xf32>) outs(%[[ACC]] : tensor<3x5xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]], %arg2 : tensor<3x5xf32>, tensor<5xf32>)
// CHECK: ^bb0(%[[X:.+]]: f32, %[[C:.+]]: f32, %{{.+}}: f32):
// CHECK-DAG: %[[ALPHA:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[BETA:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[SX:.+]] = arith.mulf %[[ALPHA]], %[[X]]
// CHECK-DAG: %[[SC:.+]] = arith.mulf %[[BETA]], %[[C]]
// CHECK: arith.addf %[[SX]], %[[SC]]
func.func @gemm(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = onnx.Gemm(%a, %b, %c) {alpha = 0.5 : f32, beta = 2.0 : f32, transB = 1 : i64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Default Gemm without C: nothing after the matmul.
// CHECK-LABEL: func.func @gemm_plain
// CHECK: %[[P:.+]] = linalg.matmul ins
// CHECK-NEXT: return %[[P]]
func.func @gemm_plain(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %none = onnx.NoValue
  %0 = onnx.Gemm(%a, %b, %none) : (tensor<3x4xf32>, tensor<4x5xf32>, none) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}
