//===- Scatter.cpp - ScatterElements and ScatterND to scf loops -----------===//
//
// A scatter writes at data-dependent positions, which no linalg indexing
// map can express, so `data` (or a copy of it, when other ops read it) is
// threaded through an scf.for nest over the updates, one tensor.extract /
// tensor.insert per element; bufferization turns it into in-place stores.
// ScatterElements builds the gradients of Gather; ScatterND is how dynamo
// writes slice_scatter and index_put.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// How an update combines with the element it lands on, by ONNX's
/// `reduction` (max and min as numpy's: a NaN wins); nullopt for "none",
/// where the update replaces it. Checks first that updates and data agree
/// in element type.
template <typename ScatterOp>
FailureOr<std::optional<arith::AtomicRMWKind>> getCombineKind(ScatterOp op) {
  Type onnxElement = getElementTypeOrSelf(op.getData().getType());
  if (getElementTypeOrSelf(op.getUpdates().getType()) != onnxElement)
    return emitLoweringError(op) << "updates and data differ in element type";
  StringRef reduction = op.getReduction();
  bool isFloat = isa<FloatType>(onnxElement);
  bool isUnsigned = onnxElement.isUnsignedInteger();
  if (reduction == "none")
    return std::optional<arith::AtomicRMWKind>();
  if (reduction == "add")
    return {isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi};
  if (reduction == "mul")
    return {isFloat ? arith::AtomicRMWKind::mulf : arith::AtomicRMWKind::muli};
  if (reduction == "max")
    return {isFloat      ? arith::AtomicRMWKind::maximumf
            : isUnsigned ? arith::AtomicRMWKind::maxu
                         : arith::AtomicRMWKind::maxs};
  if (reduction == "min")
    return {isFloat      ? arith::AtomicRMWKind::minimumf
            : isUnsigned ? arith::AtomicRMWKind::minu
                         : arith::AtomicRMWKind::mins};
  return emitLoweringError(op) << "reduction '" << reduction
                               << "' is not one of none, add, mul, max, min";
}

/// The index element of `indices` at `position`, wrapped (wrapIndex).
Value loadIndex(OpBuilder &b, Location loc, Value indices, ValueRange position,
                int64_t extent) {
  return wrapIndex(b, loc, tensor::ExtractOp::create(b, loc, indices, position),
                   extent);
}

/// `into` with every element of `updates` written (or combined) at the
/// position of `into` that `targetOf` gives for the element's position, in
/// row-major order of the updates, so with no combine the last of repeated
/// targets wins.
Value scatterLoopNest(
    OpBuilder &builder, Location loc, Value into, Value updates,
    std::optional<arith::AtomicRMWKind> combine,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
        targetOf) {
  auto updatesType = cast<RankedTensorType>(updates.getType());
  if (updatesType.getNumElements() == 0)
    return into;
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  SmallVector<Value> upperBounds;
  for (int64_t size : updatesType.getShape())
    upperBounds.push_back(arith::ConstantIndexOp::create(builder, loc, size));
  int64_t rank = updatesType.getRank();
  scf::LoopNest nest = scf::buildLoopNest(
      builder, loc, SmallVector<Value>(rank, zero), upperBounds,
      SmallVector<Value>(rank, one), ValueRange{into},
      [&](OpBuilder &b, Location nloc, ValueRange ivs,
          ValueRange iterArgs) -> scf::ValueVector {
        SmallVector<Value> target = targetOf(b, nloc, ivs);
        Value update = tensor::ExtractOp::create(b, nloc, updates, ivs);
        if (combine) {
          Value current =
              tensor::ExtractOp::create(b, nloc, iterArgs[0], target);
          update = arith::getReductionOp(*combine, b, nloc, current, update);
        }
        return {tensor::InsertOp::create(b, nloc, update, iterArgs[0], target)
                    .getResult()};
      });
  return nest.results.front();
}

Value copyOf(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return linalg::CopyOp::create(b, loc, tensor, createEmptyTensor(b, loc, type))
      .getResult(0);
}

/// output = data, then for every position q of `indices`:
/// output[q with q[axis] = indices[q]] (op)= updates[q].
struct ScatterElementsLowering : ONNXToLinalgPattern<ONNXScatterElementsOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXScatterElementsOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    auto updatesType = cast<RankedTensorType>(adaptor.getUpdates().getType());
    int64_t rank = dataType.getRank();
    if (indicesType.getRank() != rank)
      return emitLoweringError(op)
             << "indices must have the rank of data (" << rank << ")";
    if (indicesType.getShape() != updatesType.getShape())
      return emitLoweringError(op) << "indices and updates differ in shape";
    if (!isa<IntegerType>(indicesType.getElementType()))
      return emitLoweringError(op) << "indices must be integers";
    FailureOr<int64_t> axis = normalizeAxis(op, op.getAxis(), rank);
    if (failed(axis))
      return failure();
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && indicesType.getDimSize(d) > dataType.getDimSize(d))
        return emitLoweringError(op)
               << "indices dimension " << d << " (" << indicesType.getDimSize(d)
               << ") exceeds data's (" << dataType.getDimSize(d) << ")";
    int64_t axisSize = dataType.getDimSize(*axis);
    if (failed(checkConstantIndices(op, op.getIndices(), adaptor.getIndices(),
                                    IndexedAxis{*axis, axisSize})))
      return failure();
    FailureOr<std::optional<arith::AtomicRMWKind>> combine = getCombineKind(op);
    if (failed(combine))
      return failure();

    Location loc = op.getLoc();
    // A copy keeps `data` itself intact for its other users; without any,
    // bufferization updates it in place.
    Value into = op.updatesDataInPlace()
                     ? adaptor.getData()
                     : copyOf(rewriter, loc, adaptor.getData());
    Value indices = adaptor.getIndices();
    Value result =
        scatterLoopNest(rewriter, loc, into, adaptor.getUpdates(), *combine,
                        [&](OpBuilder &b, Location nloc, ValueRange ivs) {
                          SmallVector<Value> target(ivs);
                          target[*axis] =
                              loadIndex(b, nloc, indices, ivs, axisSize);
                          return target;
                        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// output = data, then for every index tuple q of `indices` ([..., k]):
/// output[indices[q], ...] (op)= updates[q, ...], a slice of data's last
/// rank - k dims per tuple.
struct ScatterNDLowering : ONNXToLinalgPattern<ONNXScatterNDOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult lower(ONNXScatterNDOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    auto updatesType = cast<RankedTensorType>(adaptor.getUpdates().getType());
    if (!isa<IntegerType>(indicesType.getElementType()) ||
        indicesType.getRank() == 0)
      return emitLoweringError(op)
             << "indices must be integers of rank at least 1";
    int64_t tupleSize = indicesType.getShape().back();
    if (tupleSize > dataType.getRank())
      return emitLoweringError(op)
             << "index tuples of " << tupleSize << " exceed data's rank "
             << dataType.getRank();
    SmallVector<int64_t> expected(indicesType.getShape().drop_back());
    llvm::append_range(expected, dataType.getShape().drop_front(tupleSize));
    if (updatesType.getShape() != ArrayRef<int64_t>(expected))
      return emitLoweringError(op)
             << "updates must have shape indices.shape[:-1] + "
                "data.shape[k:] ("
             << RankedTensorType::get(expected, updatesType.getElementType())
             << "), got " << updatesType;
    SmallVector<IndexedAxis> addressed;
    for (int64_t axis = 0; axis < tupleSize; ++axis)
      addressed.push_back({axis, dataType.getDimSize(axis)});
    if (failed(checkConstantIndices(op, op.getIndices(), adaptor.getIndices(),
                                    addressed)))
      return failure();
    FailureOr<std::optional<arith::AtomicRMWKind>> combine = getCombineKind(op);
    if (failed(combine))
      return failure();

    Location loc = op.getLoc();
    Value indices = adaptor.getIndices();
    int64_t tupleRank = indicesType.getRank() - 1;
    Value result = scatterLoopNest(
        rewriter, loc, copyOf(rewriter, loc, adaptor.getData()),
        adaptor.getUpdates(), *combine,
        [&](OpBuilder &b, Location nloc, ValueRange ivs) {
          SmallVector<Value> tuple(ivs.take_front(tupleRank));
          tuple.push_back(Value());
          SmallVector<Value> target;
          for (int64_t j = 0; j < tupleSize; ++j) {
            tuple.back() = arith::ConstantIndexOp::create(b, nloc, j);
            target.push_back(
                loadIndex(b, nloc, indices, tuple, dataType.getDimSize(j)));
          }
          llvm::append_range(target, ivs.drop_front(tupleRank));
          return target;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void vram::populateScatterToLinalgPatterns(const TypeConverter &typeConverter,
                                           RewritePatternSet &patterns) {
  patterns.add<ScatterElementsLowering, ScatterNDLowering>(
      typeConverter, patterns.getContext());
}
