//===- LinearAlgebra.cpp - onnx MatMul and Gemm to linalg -----------------===//
//
// MatMul lowers to named contractions wherever the operands allow it without
// copying (collapsing batch dimensions is a view): linalg.matmul when B has
// no batch, linalg.batch_matmul when both batches agree; batches that need
// broadcasting become a linalg.generic that reads the broadcast operand
// through its indexing map instead of materialising it. Gemm is a
// linalg.matmul whose indexing maps express transA/transB, followed by one
// elementwise generic for alpha and beta * C.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}

Value multiply(OpBuilder &b, Location loc, Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}

/// acc + lhs * rhs in the element type of `acc`.
Value multiplyAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         Value acc) {
  return add(b, loc, acc, multiply(b, loc, lhs, rhs));
}

int64_t product(ArrayRef<int64_t> sizes) {
  int64_t result = 1;
  for (int64_t size : sizes)
    result *= size;
  return result;
}

class MatMulLowering : public ONNXToLinalgPattern<ONNXMatMulOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXMatMulOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = convertTensorType(op.getY().getType());
    Type elementType = resultType.getElementType();
    if (!isa<FloatType, IntegerType>(elementType) || elementType.isInteger(1))
      return emitLoweringError(op) << "expects numeric elements";

    // numpy promotes a 1-d A to 1xK and a 1-d B to Kx1; the reshape to the
    // result type at the end drops the added dimension again.
    auto aType = cast<RankedTensorType>(adaptor.getA().getType());
    auto bType = cast<RankedTensorType>(adaptor.getB().getType());
    if (aType.getRank() == 0 || bType.getRank() == 0)
      return emitLoweringError(op) << "operands must have rank >= 1";
    SmallVector<int64_t> aShape(aType.getShape());
    SmallVector<int64_t> bShape(bType.getShape());
    if (aShape.size() == 1)
      aShape.insert(aShape.begin(), 1);
    if (bShape.size() == 1)
      bShape.push_back(1);

    int64_t m = aShape[aShape.size() - 2], k = aShape.back();
    int64_t n = bShape.back();
    if (bShape[bShape.size() - 2] != k)
      return emitLoweringError(op) << "contraction sizes differ: " << k
                                   << " and " << bShape[bShape.size() - 2];

    // Batch dimensions, left-padded with 1 to a common rank, and their
    // broadcast.
    size_t batchRank = std::max(aShape.size(), bShape.size()) - 2;
    auto paddedBatch = [&](ArrayRef<int64_t> shape) {
      SmallVector<int64_t> batch(batchRank - (shape.size() - 2), 1);
      batch.append(shape.begin(), shape.end() - 2);
      return batch;
    };
    SmallVector<int64_t> aBatch = paddedBatch(aShape);
    SmallVector<int64_t> bBatch = paddedBatch(bShape);
    SmallVector<int64_t> batch;
    for (auto [aSize, bSize] : llvm::zip(aBatch, bBatch)) {
      if (aSize != bSize && aSize != 1 && bSize != 1)
        return emitLoweringError(op) << "batch dimensions " << aSize << " and "
                                     << bSize << " do not broadcast";
      batch.push_back(aSize == 1 ? bSize : aSize);
    }

    auto typeOf = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, elementType);
    };
    Value a = adaptor.getA();
    Value b = adaptor.getB();
    Value product2d;
    if (llvm::all_of(bBatch, [](int64_t size) { return size == 1; })) {
      // B is one matrix: fold A's batch into its rows, one linalg.matmul.
      int64_t rows = product(aBatch) * m;
      a = reshapeTensor(rewriter, loc, a, typeOf({rows, k}));
      b = reshapeTensor(rewriter, loc, b, typeOf({k, n}));
      product2d =
          linalg::MatmulOp::create(
              rewriter, loc, ValueRange{a, b},
              ValueRange{createZeroTensor(rewriter, loc, typeOf({rows, n}))})
              .getResult(0);
    } else if (aBatch == bBatch) {
      int64_t batches = product(batch);
      a = reshapeTensor(rewriter, loc, a, typeOf({batches, m, k}));
      b = reshapeTensor(rewriter, loc, b, typeOf({batches, k, n}));
      product2d = linalg::BatchMatmulOp::create(
                      rewriter, loc, ValueRange{a, b},
                      ValueRange{createZeroTensor(rewriter, loc,
                                                  typeOf({batches, m, n}))})
                      .getResult(0);
    } else {
      product2d = buildBroadcastBatchMatmul(rewriter, loc, a, b, aBatch, bBatch,
                                            batch, m, n, k);
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, product2d, resultType));
    return success();
  }

private:
  /// Batched matmul over iteration space (batch..., m, n, k) where an
  /// operand's size-1 batch dimensions read index 0.
  static Value buildBroadcastBatchMatmul(OpBuilder &builder, Location loc,
                                         Value a, Value b,
                                         ArrayRef<int64_t> aBatch,
                                         ArrayRef<int64_t> bBatch,
                                         ArrayRef<int64_t> batch, int64_t m,
                                         int64_t n, int64_t k) {
    MLIRContext *context = builder.getContext();
    Type elementType = cast<ShapedType>(a.getType()).getElementType();
    unsigned batchRank = batch.size();
    auto withMatrix = [](ArrayRef<int64_t> prefix, int64_t rows, int64_t cols) {
      SmallVector<int64_t> shape(prefix);
      shape.push_back(rows);
      shape.push_back(cols);
      return shape;
    };
    a = reshapeTensor(
        builder, loc, a,
        RankedTensorType::get(withMatrix(aBatch, m, k), elementType));
    b = reshapeTensor(
        builder, loc, b,
        RankedTensorType::get(withMatrix(bBatch, k, n), elementType));
    AffineExpr dm = getAffineDimExpr(batchRank, context);
    AffineExpr dn = getAffineDimExpr(batchRank + 1, context);
    AffineExpr dk = getAffineDimExpr(batchRank + 2, context);
    auto batchExprs = [&](ArrayRef<int64_t> operandBatch) {
      SmallVector<AffineExpr> exprs;
      for (auto [dim, size] : llvm::enumerate(operandBatch))
        exprs.push_back(size == 1 && batch[dim] != 1
                            ? getAffineConstantExpr(0, context)
                            : getAffineDimExpr(dim, context));
      return exprs;
    };
    auto mapOf = [&](SmallVector<AffineExpr> exprs, AffineExpr row,
                     AffineExpr col) {
      exprs.push_back(row);
      exprs.push_back(col);
      return AffineMap::get(batchRank + 3, 0, exprs, context);
    };
    SmallVector<AffineMap> maps = {mapOf(batchExprs(aBatch), dm, dk),
                                   mapOf(batchExprs(bBatch), dk, dn),
                                   mapOf(batchExprs(batch), dm, dn)};
    SmallVector<utils::IteratorType> iterators =
        getParallelIterators(batchRank + 2);
    iterators.push_back(utils::IteratorType::reduction);
    auto outType = RankedTensorType::get(withMatrix(batch, m, n), elementType);
    return linalg::GenericOp::create(
               builder, loc, TypeRange{outType}, ValueRange{a, b},
               ValueRange{createZeroTensor(builder, loc, outType)}, maps,
               iterators,
               [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
                 linalg::YieldOp::create(nested, nestedLoc,
                                         multiplyAccumulate(nested, nestedLoc,
                                                            args[0], args[1],
                                                            args[2]));
               })
        .getResult(0);
  }
};

/// Einsum -> one linalg.generic over every label: the result's labels are
/// parallel dims, the summed ones reductions; each operand reads its labels
/// (an ellipsis dim of size 1 that broadcasts reads index 0), and the body
/// adds the product of the operands' elements to the accumulator.
class EinsumLowering : public ONNXToLinalgPattern<ONNXEinsumOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXEinsumOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto resultType = convertTensorType(op.getOutput().getType());
    Type elementType = resultType.getElementType();
    if (!isa<FloatType, IntegerType>(elementType) || elementType.isInteger(1))
      return emitLoweringError(op) << "expects numeric elements";
    llvm::Expected<EinsumSpec> spec = op.getSpec();
    if (!spec)
      return emitLoweringError(op) << llvm::toString(spec.takeError());
    std::string labels = spec->output + spec->reducedLabels();
    MLIRContext *context = op.getContext();
    auto dimOf = [&](char label) {
      return getAffineDimExpr(labels.find(label), context);
    };
    SmallVector<AffineMap> maps;
    for (auto [input, operand] : llvm::zip(spec->inputs, adaptor.getInputs())) {
      auto shape = cast<RankedTensorType>(operand.getType()).getShape();
      SmallVector<AffineExpr> exprs;
      for (auto [label, size] : llvm::zip(input, shape))
        exprs.push_back(size == 1 && spec->extents.at(label) != 1
                            ? getAffineConstantExpr(0, context)
                            : dimOf(label));
      maps.push_back(AffineMap::get(labels.size(), 0, exprs, context));
    }
    SmallVector<AffineExpr> outputExprs;
    for (char label : spec->output)
      outputExprs.push_back(dimOf(label));
    maps.push_back(AffineMap::get(labels.size(), 0, outputExprs, context));
    SmallVector<utils::IteratorType> iterators =
        getParallelIterators(spec->output.size());
    iterators.append(labels.size() - spec->output.size(),
                     utils::IteratorType::reduction);
    Location loc = op.getLoc();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{resultType}, adaptor.getInputs(),
            ValueRange{createZeroTensor(rewriter, loc, resultType)}, maps,
            iterators,
            [](OpBuilder &b, Location nloc, ValueRange args) {
              Value product = args.front();
              for (Value factor : args.drop_front().drop_back())
                product = multiply(b, nloc, product, factor);
              linalg::YieldOp::create(b, nloc,
                                      add(b, nloc, args.back(), product));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

class GemmLowering : public ONNXToLinalgPattern<ONNXGemmOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXGemmOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *context = rewriter.getContext();
    auto resultType = convertTensorType(op.getY().getType());
    Type elementType = resultType.getElementType();
    auto aType = cast<RankedTensorType>(adaptor.getA().getType());
    auto bType = cast<RankedTensorType>(adaptor.getB().getType());
    if (aType.getRank() != 2 || bType.getRank() != 2)
      return emitLoweringError(op) << "A and B must be 2-d";
    bool transA = op.getTransA() != 0, transB = op.getTransB() != 0;
    int64_t k = aType.getDimSize(transA ? 0 : 1);
    if (bType.getDimSize(transB ? 1 : 0) != k)
      return emitLoweringError(op) << "contraction sizes differ";

    // Transposition lives in the indexing maps: no transposed copy.
    AffineExpr m, n, r;
    bindDims(context, m, n, r);
    SmallVector<AffineMap> maps = {
        AffineMap::get(3, 0,
                       transA ? ArrayRef<AffineExpr>{r, m}
                              : ArrayRef<AffineExpr>{m, r},
                       context),
        AffineMap::get(3, 0,
                       transB ? ArrayRef<AffineExpr>{n, r}
                              : ArrayRef<AffineExpr>{r, n},
                       context),
        AffineMap::get(3, 0, {m, n}, context)};
    auto matmul = linalg::MatmulOp::create(
        rewriter, loc, ValueRange{adaptor.getA(), adaptor.getB()},
        ValueRange{createZeroTensor(rewriter, loc, resultType)});
    if (transA || transB)
      matmul.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
    Value result = matmul.getResult(0);

    double alpha = op.getAlpha().convertToDouble();
    double beta = op.getBeta().convertToDouble();
    bool hasC = !isa<NoneType>(op.getC().getType()) && beta != 0.0;
    if (alpha != 1.0 || hasC) {
      SmallVector<Value> inputs = {result};
      if (hasC)
        inputs.push_back(adaptor.getC());
      result = buildElementwiseGeneric(
          rewriter, loc, resultType, inputs,
          [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
            bool isFloat = isa<FloatType>(elementType);
            auto scale = [&](double factor, Value value) -> Value {
              if (factor == 1.0)
                return value;
              Value c = createScalarConstant(b, nestedLoc, elementType, factor);
              if (isFloat)
                return arith::MulFOp::create(b, nestedLoc, c, value);
              return arith::MulIOp::create(b, nestedLoc, c, value);
            };
            Value sum = scale(alpha, args[0]);
            if (!hasC)
              return sum;
            Value bias = scale(beta, args[1]);
            if (isFloat)
              return Value(arith::AddFOp::create(b, nestedLoc, sum, bias));
            return Value(arith::AddIOp::create(b, nestedLoc, sum, bias));
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void vram::populateLinearAlgebraToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<MatMulLowering, GemmLowering, EinsumLowering>(
      typeConverter, patterns.getContext());
}
