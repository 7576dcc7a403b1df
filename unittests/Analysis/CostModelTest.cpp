//===- CostModelTest.cpp - exact flops and bytes of the cost model --------===//
//
// Every expected number is computed by hand in the comment next to it.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/CostModel.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace vram;

namespace {

class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    DialectRegistry registry;
    registry.insert<ONNXDialect, func::FuncDialect, linalg::LinalgDialect,
                    arith::ArithDialect, math::MathDialect>();
    registerCostModelExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` as the body of a function and returns its first op named
  /// `opName`.
  Operation *parseAndFind(StringRef source, StringRef opName) {
    module = parseSourceString<ModuleOp>(source, &context);
    if (!module)
      return nullptr;
    Operation *found = nullptr;
    module->walk([&](Operation *op) {
      if (!found && op->getName().getStringRef() == opName)
        found = op;
    });
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostModelTest, ConvWithBiasAndPadding) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>,
                 %b: tensor<16xf32>) -> tensor<1x16x8x8xf32> {
      %y = onnx.Conv(%x, %w, %b) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]}
          : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>)
          -> tensor<1x16x8x8xf32>
      return %y : tensor<1x16x8x8xf32>
    })mlir",
                               "onnx.Conv");
  ASSERT_TRUE(op);
  EXPECT_TRUE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  // outputs = 1*16*8*8 = 1024, dot length = C/group * kh * kw = 3*3*3 = 27:
  // 2 * 1024 * 27 = 55296, + 1024 bias adds = 56320.
  EXPECT_DOUBLE_EQ(cost.flops, 56320);
  // X 192 + W 432 + B 16 + Y 1024 = 1664 elements * 4 bytes = 6656.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 6656);
  // im2col of one image: (C*kh*kw = 27) rows x (8*8 = 64) cols * 4 = 6912.
  EXPECT_EQ(cost.workspaceBytes, 6912u);
  EXPECT_TRUE(cost.complete);
}

TEST_F(CostModelTest, GroupedStridedConv) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<2x8x10x10xf32>, %w: tensor<8x2x3x3xf32>)
        -> tensor<2x8x4x4xf32> {
      %none = onnx.NoValue
      %y = onnx.Conv(%x, %w, %none) {group = 4 : i64, kernel_shape = [3, 3],
                                     strides = [2, 2]}
          : (tensor<2x8x10x10xf32>, tensor<8x2x3x3xf32>, none)
          -> tensor<2x8x4x4xf32>
      return %y : tensor<2x8x4x4xf32>
    })mlir",
                               "onnx.Conv");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // outputs = 2*8*4*4 = 256 ((10-3)/2+1 = 4), dot length = C/group*3*3 =
  // 2*9 = 18, no bias: 2 * 256 * 18 = 9216.
  EXPECT_DOUBLE_EQ(cost.flops, 9216);
  // X 1600 + W 144 + Y 256 = 2000 elements * 4 = 8000; none is 0 bytes.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 8000);
  // (C*kh*kw = 8*9 = 72) rows x (4*4 = 16) cols * 4 bytes = 4608.
  EXPECT_EQ(cost.workspaceBytes, 4608u);
}

TEST_F(CostModelTest, PointwiseConvNeedsNoWorkspace) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<1x4x5x5xf16>, %w: tensor<6x4x1x1xf16>)
        -> tensor<1x6x5x5xf16> {
      %none = onnx.NoValue
      %y = onnx.Conv(%x, %w, %none) {kernel_shape = [1, 1]}
          : (tensor<1x4x5x5xf16>, tensor<6x4x1x1xf16>, none)
          -> tensor<1x6x5x5xf16>
      return %y : tensor<1x6x5x5xf16>
    })mlir",
                               "onnx.Conv");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // 2 * (1*6*5*5 = 150) * 4 = 1200.
  EXPECT_DOUBLE_EQ(cost.flops, 1200);
  EXPECT_EQ(cost.workspaceBytes, 0u);
}

// A weight gradient's Conv: X^T (the batch as channels) convolved with dY
// as the kernel. The linalg lowering pads a copy of all of X, more than
// one image's column matrix: the workspace is what the code allocates.
TEST_F(CostModelTest, PaddedCopyOutgrowsTheColumnMatrix) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<64x8x56x56xf32>, %w: tensor<64x8x56x56xf32>)
        -> tensor<64x64x3x3xf32> {
      %none = onnx.NoValue
      %y = onnx.Conv(%x, %w, %none) {kernel_shape = [56, 56],
                                     pads = [1, 1, 1, 1]}
          : (tensor<64x8x56x56xf32>, tensor<64x8x56x56xf32>, none)
          -> tensor<64x64x3x3xf32>
      return %y : tensor<64x64x3x3xf32>
    })mlir",
                               "onnx.Conv");
  ASSERT_TRUE(op);
  // Column matrix of one image: (8*56*56 = 25,088) rows x 9 cols * 4 =
  // 903,168 bytes; the padded copy: 64*8*58*58 * 4 = 6,889,472.
  EXPECT_EQ(estimateOpCost(op).workspaceBytes, 6889472u);
}

// A data gradient's ConvTranspose (stride 2, pads 1, output_padding 1): the
// lowering spreads X with a zero between elements, pads it by
// d(K-1) - pad = 2 - 1 = 1 before and 2 - 1 + output_padding 1 = 2 after:
// (16 - 1)*2 + 1 + 1 + 2 = 34 per axis, and flips W: (2*8*34*34 = 18,496)
// + (8*4*3*3 = 288) elements * 4 bytes = 75,136, over the col2im matrix
// (4*9 = 36 rows x 16*16 cols * 4 = 36,864).
TEST_F(CostModelTest, ConvTransposeSpreadsItsInput) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<2x8x16x16xf32>, %w: tensor<8x4x3x3xf32>)
        -> tensor<2x4x32x32xf32> {
      %none = onnx.NoValue
      %y = onnx.ConvTranspose(%x, %w, %none) {kernel_shape = [3, 3],
          strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]}
          : (tensor<2x8x16x16xf32>, tensor<8x4x3x3xf32>, none)
          -> tensor<2x4x32x32xf32>
      return %y : tensor<2x4x32x32xf32>
    })mlir",
                               "onnx.ConvTranspose");
  ASSERT_TRUE(op);
  EXPECT_EQ(estimateOpCost(op).workspaceBytes, 75136u);
}

TEST_F(CostModelTest, BatchedMatMulBroadcastsBatchDims) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<2x3x4x5xf32>, %b: tensor<5x6xf32>)
        -> tensor<2x3x4x6xf32> {
      %y = onnx.MatMul(%a, %b)
          : (tensor<2x3x4x5xf32>, tensor<5x6xf32>) -> tensor<2x3x4x6xf32>
      return %y : tensor<2x3x4x6xf32>
    })mlir",
                               "onnx.MatMul");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // batch 2*3, M 4, N 6, K 5: 2 * 6 * 4 * 6 * 5 = 1440.
  EXPECT_DOUBLE_EQ(cost.flops, 1440);
  // A 120 + B 30 + Y 144 = 294 elements * 4 = 1176.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 1176);
  EXPECT_EQ(cost.workspaceBytes, 0u);
}

TEST_F(CostModelTest, VectorMatrixMatMul) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<5xf32>, %b: tensor<5x6xf32>) -> tensor<6xf32> {
      %y = onnx.MatMul(%a, %b) : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
      return %y : tensor<6xf32>
    })mlir",
                               "onnx.MatMul");
  ASSERT_TRUE(op);
  // N 6, K 5: 2 * 6 * 5 = 60.
  EXPECT_DOUBLE_EQ(estimateOpCost(op).flops, 60);
}

TEST_F(CostModelTest, GemmTransposedAWithBias) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<8x4xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>)
        -> tensor<4x16xf32> {
      %y = onnx.Gemm(%a, %b, %c) {transA = 1 : i64}
          : (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16xf32>)
          -> tensor<4x16xf32>
      return %y : tensor<4x16xf32>
    })mlir",
                               "onnx.Gemm");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // A' is 4x8 so M 4, K 8, N 16: 2*4*16*8 = 1024, + C: 4*16 = 64 -> 1088
  // (alpha = beta = 1 cost nothing).
  EXPECT_DOUBLE_EQ(cost.flops, 1088);
  // A 32 + B 128 + C 16 + Y 64 = 240 elements * 4 = 960.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 960);
}

TEST_F(CostModelTest, GemmScaledBias) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<4x16xf32>)
        -> tensor<4x16xf32> {
      %y = onnx.Gemm(%a, %b, %c) {alpha = 2.0 : f32, beta = 0.5 : f32,
                                  transB = 1 : i64}
          : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32>)
          -> tensor<4x16xf32>
      return %y : tensor<4x16xf32>
    })mlir",
                               "onnx.Gemm");
  ASSERT_TRUE(op);
  // 2*4*16*8 = 1024, + 64 (alpha) + 64 (+ C) + 64 (beta) = 1216.
  EXPECT_DOUBLE_EQ(estimateOpCost(op).flops, 1216);
}

TEST_F(CostModelTest, SoftmaxAndTranscendentals) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
      %y = onnx.Softmax(%x) : (tensor<2x10xf32>) -> tensor<2x10xf32>
      %z = onnx.Erf(%y) : (tensor<2x10xf32>) -> tensor<2x10xf32>
      return %z : tensor<2x10xf32>
    })mlir",
                               "onnx.Softmax");
  ASSERT_TRUE(op);
  // 20 elements * (4 + kTranscendentalFlops = 14) = 280.
  EXPECT_DOUBLE_EQ(estimateOpCost(op).flops, 280);
  Operation *erf = op->getNextNode();
  // 20 * kTranscendentalFlops = 200; bytes 2 * 80 = 160.
  EXPECT_DOUBLE_EQ(estimateOpCost(erf).flops, 200);
  EXPECT_DOUBLE_EQ(estimateOpCost(erf).bytesAccessed, 160);
}

TEST_F(CostModelTest, PoolingCountsWindowPerOutput) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> {
      %y, %i = onnx.MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]}
          : (tensor<1x2x8x8xf32>) -> (tensor<1x2x4x4xf32>, none)
      return %y : tensor<1x2x4x4xf32>
    })mlir",
                               "onnx.MaxPool");
  ASSERT_TRUE(op);
  // 32 outputs * 2*2 window = 128.
  EXPECT_DOUBLE_EQ(estimateOpCost(op).flops, 128);
}

TEST_F(CostModelTest, ViewsAreFree) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
      %y = onnx.Flatten(%x) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
      return %y : tensor<2x12xf32>
    })mlir",
                               "onnx.Flatten");
  ASSERT_TRUE(op);
  EXPECT_TRUE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  EXPECT_EQ(cost.flops, 0);
  EXPECT_EQ(cost.bytesAccessed, 0);
}

TEST_F(CostModelTest, UnknownOnnxNodeGetsTheDefault) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %y = onnx.Node "Celu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
      return %y : tensor<4x8xf32>
    })mlir",
                               "onnx.Node");
  ASSERT_TRUE(op);
  EXPECT_FALSE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  // Default: one flop per result element (32), operand + result bytes
  // (128 + 128).
  EXPECT_DOUBLE_EQ(cost.flops, 32);
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 256);
}

TEST_F(CostModelTest, DynamicShapesAreLowerBounds) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
      %y = onnx.Relu(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
      return %y : tensor<?x8xf32>
    })mlir",
                               "onnx.Relu");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  EXPECT_FALSE(cost.complete);
  // The dynamic dimension counts as 1: 8 elements, 32 + 32 bytes.
  EXPECT_DOUBLE_EQ(cost.flops, 8);
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 64);
}

TEST_F(CostModelTest, OpsOfOtherDialectsGetTheDefault) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %y = arith.addf %a, %b : tensor<4x8xf32>
      return %y : tensor<4x8xf32>
    })mlir",
                               "arith.addf");
  ASSERT_TRUE(op);
  EXPECT_FALSE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  // 32 result elements; 3 tensors of 128 bytes.
  EXPECT_DOUBLE_EQ(cost.flops, 32);
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 384);
  // Terminators only forward values.
  Operation *ret = op->getNextNode();
  EXPECT_EQ(estimateOpCost(ret).bytesAccessed, 0);
  EXPECT_EQ(estimateOpCost(ret).flops, 0);
}

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

TEST_F(CostModelTest, LinalgGenericMultiplyAdd) {
  Operation *op = parseAndFind(R"mlir(
    #id = affine_map<(d0, d1) -> (d0, d1)>
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>)
        -> tensor<4x8xf32> {
      %r = linalg.generic {indexing_maps = [#id, #id, #id],
                           iterator_types = ["parallel", "parallel"]}
          ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>)
          outs(%c : tensor<4x8xf32>) {
      ^bb0(%x: f32, %y: f32, %acc: f32):
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %m, %acc : f32
        linalg.yield %s : f32
      } -> tensor<4x8xf32>
      return %r : tensor<4x8xf32>
    })mlir",
                               "linalg.generic");
  ASSERT_TRUE(op);
  EXPECT_TRUE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  // 4*8 = 32 iterations * (mulf + addf = 2) = 64.
  EXPECT_DOUBLE_EQ(cost.flops, 64);
  // a 128 + b 128 + c written 128 + c read (the payload uses %acc) 128 = 512.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 512);
  EXPECT_EQ(cost.workspaceBytes, 0u);
}

TEST_F(CostModelTest, LinalgGenericWithTranscendental) {
  Operation *op = parseAndFind(R"mlir(
    #id = affine_map<(d0) -> (d0)>
    func.func @f(%a: tensor<16xf32>, %c: tensor<16xf32>) -> tensor<16xf32> {
      %r = linalg.generic {indexing_maps = [#id, #id],
                           iterator_types = ["parallel"]}
          ins(%a : tensor<16xf32>) outs(%c : tensor<16xf32>) {
      ^bb0(%x: f32, %unused: f32):
        %cst = arith.constant 1.0 : f32
        %e = math.exp %x : f32
        %s = arith.addf %e, %cst : f32
        linalg.yield %s : f32
      } -> tensor<16xf32>
      return %r : tensor<16xf32>
    })mlir",
                               "linalg.generic");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // 16 * (exp 10 + addf 1; the constant is free) = 176.
  EXPECT_DOUBLE_EQ(cost.flops, 176);
  // a 64 + c written 64 (the payload ignores its old value) = 128.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 128);
}

TEST_F(CostModelTest, LinalgNamedMatmul) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>)
        -> tensor<4x16xf32> {
      %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>)
                         outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
      return %r : tensor<4x16xf32>
    })mlir",
                               "linalg.matmul");
  ASSERT_TRUE(op);
  EXPECT_TRUE(hasCostModel(op));
  OpCost cost = estimateOpCost(op);
  // Domain M 4 x N 16 x K 8 = 512, payload mulf + addf: 1024 = 2*M*N*K.
  EXPECT_DOUBLE_EQ(cost.flops, 1024);
  // A 128 + B 512 + C read 256 + C written 256 = 1152.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 1152);
}

TEST_F(CostModelTest, LinalgMixedPrecisionMatmulIgnoresCasts) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>,
                 %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
      %r = linalg.matmul ins(%a, %b : tensor<4x8xbf16>, tensor<8x16xbf16>)
                         outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
      return %r : tensor<4x16xf32>
    })mlir",
                               "linalg.matmul");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // The body extends both bf16 inputs to f32 (free), then mulf + addf:
  // still 2*4*16*8 = 1024.
  EXPECT_DOUBLE_EQ(cost.flops, 1024);
  // A 32*2 = 64 + B 128*2 = 256 + C 256 read + 256 written = 832.
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 832);
}

TEST_F(CostModelTest, LinalgFillCountsOnePerElement) {
  Operation *op = parseAndFind(R"mlir(
    func.func @f(%c: tensor<4x16xf32>) -> tensor<4x16xf32> {
      %zero = arith.constant 0.0 : f32
      %r = linalg.fill ins(%zero : f32) outs(%c : tensor<4x16xf32>)
          -> tensor<4x16xf32>
      return %r : tensor<4x16xf32>
    })mlir",
                               "linalg.fill");
  ASSERT_TRUE(op);
  OpCost cost = estimateOpCost(op);
  // Empty payload: the minimum of 1 per iteration, 64 iterations; the scalar
  // is free and C is only written: 256 bytes.
  EXPECT_DOUBLE_EQ(cost.flops, 64);
  EXPECT_DOUBLE_EQ(cost.bytesAccessed, 256);
}

} // namespace
