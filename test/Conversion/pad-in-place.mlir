// RUN: vram-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(vram-pad-in-place))" | FileCheck %s
// RUN: vram-opt %s --split-input-file --vram-lower-to-buffers --canonicalize | FileCheck %s --check-prefix=BUFFERS

#id = affine_map<(d0, d1) -> (d0, d1)>

// The ReLU before a padded 3x3 convolution writes into the interior of the
// zero-filled padded tensor, which is inserted back where it came from.
// CHECK-LABEL: func.func @relu_then_pad
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<6x10xf32>
// CHECK: %[[PADDED:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<6x10xf32>)
// CHECK: %[[INTERIOR:.*]] = tensor.extract_slice %[[PADDED]][1, 2] [4, 6] [1, 1]
// CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x6xf32>) outs(%[[INTERIOR]] : tensor<4x6xf32>)
// CHECK: %[[RESULT:.*]] = tensor.insert_slice %[[RELU]] into %[[PADDED]][1, 2] [4, 6] [1, 1]
// CHECK-NOT: tensor.pad
// CHECK: return %[[RESULT]]
// Bufferized: the ReLU writes a subview of the padded buffer, and no copy
// is left (without the pass, the pad copies the ReLU's buffer in).
// BUFFERS-LABEL: func.func @relu_then_pad
// BUFFERS: %[[BUF:.*]] = memref.alloc() {{.*}} : memref<6x10xf32>
// BUFFERS: linalg.fill {{.*}} outs(%[[BUF]]
// BUFFERS: %[[SUB:.*]] = memref.subview %[[BUF]][1, 2] [4, 6] [1, 1]
// BUFFERS: linalg.generic {{.*}} outs(%[[SUB]]
// BUFFERS-NOT: memref.copy
// BUFFERS: return
func.func @relu_then_pad(%x: tensor<4x6xf32>) -> tensor<6x10xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x6xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%empty : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %max = arith.maximumf %in, %zero : f32
    linalg.yield %max : f32
  } -> tensor<4x6xf32>
  %padded = tensor.pad %relu low[1, 2] high[1, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x6xf32> to tensor<6x10xf32>
  return %padded : tensor<6x10xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The ReLU's result is read by something else too, which would then read a
// strided view of the padded buffer: the pad stays.
// CHECK-LABEL: func.func @second_reader
// CHECK: tensor.pad
// CHECK-NOT: tensor.insert_slice
func.func @second_reader(%x: tensor<4x6xf32>) -> (tensor<6x10xf32>, tensor<4x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x6xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id],
                          iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x6xf32>) outs(%empty : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %max = arith.maximumf %in, %zero : f32
    linalg.yield %max : f32
  } -> tensor<4x6xf32>
  %padded = tensor.pad %relu low[1, 2] high[1, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x6xf32> to tensor<6x10xf32>
  return %padded, %relu : tensor<6x10xf32>, tensor<4x6xf32>
}

// -----

// A producer that accumulates into another tensor (a matmul into its bias)
// does not start from an empty tensor: the pad stays.
// CHECK-LABEL: func.func @accumulating_producer
// CHECK: tensor.pad
func.func @accumulating_producer(%a: tensor<4x3xf32>, %b: tensor<3x6xf32>,
                                 %bias: tensor<4x6xf32>) -> tensor<6x10xf32> {
  %zero = arith.constant 0.0 : f32
  %product = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x6xf32>)
      outs(%bias : tensor<4x6xf32>) -> tensor<4x6xf32>
  %padded = tensor.pad %product low[1, 2] high[1, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x6xf32> to tensor<6x10xf32>
  return %padded : tensor<6x10xf32>
}

// -----

// Padding with a value that is not a constant (an argument) stays a pad.
// CHECK-LABEL: func.func @padding_value_not_constant
// CHECK: tensor.pad
func.func @padding_value_not_constant(%x: tensor<4x6xf32>, %value: f32) -> tensor<6x10xf32> {
  %empty = tensor.empty() : tensor<4x6xf32>
  %filled = linalg.fill ins(%value : f32) outs(%empty : tensor<4x6xf32>) -> tensor<4x6xf32>
  %padded = tensor.pad %filled low[1, 2] high[1, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %value : f32
  } : tensor<4x6xf32> to tensor<6x10xf32>
  return %padded : tensor<6x10xf32>
}
