//===- Pad.cpp - onnx.Pad to linalg --------------------------------------===//
//
// Constant padding with constant pads is tensor.pad; the other modes
// (reflect, edge, wrap) and pads computed at run time are a linalg.generic
// that computes each result element's source index from the pads and reads
// it with tensor.extract.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

class PadLowering : public ONNXToLinalgPattern<ONNXPadOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXPadOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto resultType = convertTensorType(op.getOutput().getType());
    int64_t rank = dataType.getRank();
    StringRef mode = op.getMode();
    if (mode != "constant" && mode != "reflect" && mode != "edge" &&
        mode != "wrap")
      return emitLoweringError(op) << "unknown mode '" << mode << "'";
    FailureOr<Value> padValue = getPadValue(op, adaptor, rewriter);
    if (failed(padValue))
      return failure();

    // Only the leading pads place the data: the result type fixes the
    // trailing ones. Pads computed at run time must agree with it, as shape
    // inference assumed.
    SmallVector<Value> lowPads;
    if (std::optional<SmallVector<int64_t>> pads =
            getConstantIntValues(op.getPads(), adaptor.getPads())) {
      if (static_cast<int64_t>(pads->size()) != 2 * rank)
        return emitLoweringError(op) << "pads has " << pads->size()
                                     << " entries, expected " << 2 * rank;
      ArrayRef<int64_t> low = ArrayRef<int64_t>(*pads).take_front(rank);
      ArrayRef<int64_t> high = ArrayRef<int64_t>(*pads).drop_front(rank);
      for (int64_t dim = 0; dim < rank; ++dim)
        if (dataType.getDimSize(dim) + low[dim] + high[dim] !=
            resultType.getDimSize(dim))
          return emitLoweringError(op)
                 << "pads do not give the result type " << resultType;
      if (mode == "constant")
        return lowerConstant(op, adaptor, *padValue, low, high, resultType,
                             rewriter);
      for (int64_t pad : low)
        lowPads.push_back(arith::ConstantIntOp::create(
            rewriter, loc, rewriter.getI64Type(), pad));
    } else {
      auto padsType = dyn_cast<RankedTensorType>(adaptor.getPads().getType());
      if (!padsType || padsType.getShape() != ArrayRef<int64_t>{2 * rank})
        return emitLoweringError(op)
               << "pads computed at run time need the static type tensor<"
               << 2 * rank << "xi64>";
      for (int64_t dim = 0; dim < rank; ++dim)
        lowPads.push_back(tensor::ExtractOp::create(
            rewriter, loc, adaptor.getPads(),
            ValueRange{arith::ConstantIndexOp::create(rewriter, loc, dim)}));
    }
    if (dataType.getNumElements() == 0 && resultType.getNumElements() != 0) {
      if (mode != "constant")
        return emitLoweringError(op)
               << "cannot " << mode << "-pad an empty dimension";
      // Nothing to read: every element is the pad value.
      rewriter.replaceOpWithNewOp<linalg::FillOp>(
          op, ValueRange{*padValue},
          ValueRange{createEmptyTensor(rewriter, loc, resultType)});
      return success();
    }
    rewriter.replaceOp(op, buildPadGather(rewriter, loc, data, resultType, mode,
                                          lowPads, *padValue));
    return success();
  }

private:
  /// The constant_value operand's only element, or zero when absent.
  static FailureOr<Value> getPadValue(ONNXPadOp op, OpAdaptor adaptor,
                                      OpBuilder &builder) {
    Location loc = op.getLoc();
    Type elementType =
        cast<RankedTensorType>(adaptor.getData().getType()).getElementType();
    if (isa<NoneType>(op.getConstantValue().getType()))
      return createScalarConstant(builder, loc, elementType, 0.0);
    // A scalar tensor (rank 0, or one element): read its only element.
    auto valueType =
        cast<RankedTensorType>(adaptor.getConstantValue().getType());
    if (valueType.getNumElements() != 1)
      return emitLoweringError(op) << "constant_value must be a scalar";
    return extractOnlyElement(builder, loc, adaptor.getConstantValue());
  }

  /// Every output element reads data at (i_d - low_d) per dimension, mapped
  /// into the input by the mode: edge clamps, reflect mirrors without
  /// repeating the edge (as often as needed), wrap repeats the data
  /// periodically, constant reads `padValue` outside. Negative pads crop.
  /// `lowPads` are i64 values, constant or computed.
  static Value buildPadGather(OpBuilder &builder, Location loc, Value data,
                              RankedTensorType resultType, StringRef mode,
                              ArrayRef<Value> lowPads, Value padValue) {
    auto dataType = cast<RankedTensorType>(data.getType());
    return buildParallelGeneric(
        builder, loc, resultType, ValueRange{}, {},
        [&](OpBuilder &b, Location nestedLoc, ValueRange) -> Value {
          Type i64 = b.getI64Type();
          auto constant = [&](int64_t value) -> Value {
            return arith::ConstantIntOp::create(b, nestedLoc, i64, value);
          };
          using Predicate = arith::CmpIPredicate;
          Value inside;
          SmallVector<Value> position;
          for (auto [dim, low] : llvm::enumerate(lowPads)) {
            int64_t size = dataType.getDimSize(dim);
            Value index = arith::IndexCastOp::create(
                b, nestedLoc, i64, linalg::IndexOp::create(b, nestedLoc, dim));
            Value source = arith::SubIOp::create(b, nestedLoc, index, low);
            Value zero = constant(0), last = constant(size - 1);
            if (mode == "constant") {
              Value here = arith::AndIOp::create(
                  b, nestedLoc,
                  arith::CmpIOp::create(b, nestedLoc, Predicate::sge, source,
                                        zero),
                  arith::CmpIOp::create(b, nestedLoc, Predicate::sle, source,
                                        last));
              inside =
                  inside
                      ? Value(arith::AndIOp::create(b, nestedLoc, inside, here))
                      : here;
            } else if (mode == "reflect" && size > 1) {
              // Period 2 (size - 1): fold into [0, period), then mirror.
              Value period = constant(2 * (size - 1));
              Value folded =
                  arith::RemSIOp::create(b, nestedLoc, source, period);
              folded = arith::RemSIOp::create(
                  b, nestedLoc,
                  arith::AddIOp::create(b, nestedLoc, folded, period), period);
              Value mirrored =
                  arith::SubIOp::create(b, nestedLoc, period, folded);
              source = arith::SelectOp::create(
                  b, nestedLoc,
                  arith::CmpIOp::create(b, nestedLoc, Predicate::sgt, folded,
                                        last),
                  mirrored, folded);
            } else if (mode == "wrap") {
              // Into [0, size): a remainder with the divisor's sign.
              Value period = constant(size);
              source = arith::RemSIOp::create(
                  b, nestedLoc,
                  arith::AddIOp::create(
                      b, nestedLoc,
                      arith::RemSIOp::create(b, nestedLoc, source, period),
                      period),
                  period);
            }
            // Edge mode, and in-bounds reads for the others.
            source = arith::MaxSIOp::create(
                b, nestedLoc, zero,
                arith::MinSIOp::create(b, nestedLoc, source, last));
            position.push_back(arith::IndexCastOp::create(
                b, nestedLoc, b.getIndexType(), source));
          }
          Value value = tensor::ExtractOp::create(b, nestedLoc, data, position);
          if (!inside)
            return value;
          return arith::SelectOp::create(b, nestedLoc, inside, value, padValue);
        });
  }

private:
  /// Constant pads known here: a tensor.pad (after a crop for negative
  /// pads), which bufferizes to a fill and a copy into a subview.
  LogicalResult lowerConstant(ONNXPadOp op, OpAdaptor adaptor, Value padValue,
                              ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                              RankedTensorType resultType,
                              ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    Type elementType = dataType.getElementType();
    // Negative pads remove elements: slice those off first.
    int64_t rank = dataType.getRank();
    SmallVector<int64_t> offsets(rank), sizes(rank), lowPad(rank),
        highPad(rank);
    bool crops = false;
    for (int64_t dim = 0; dim < rank; ++dim) {
      offsets[dim] = std::max<int64_t>(-low[dim], 0);
      sizes[dim] = dataType.getDimSize(dim) - offsets[dim] -
                   std::max<int64_t>(-high[dim], 0);
      lowPad[dim] = std::max<int64_t>(low[dim], 0);
      highPad[dim] = std::max<int64_t>(high[dim], 0);
      crops |= low[dim] < 0 || high[dim] < 0;
    }
    if (crops)
      data = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get(sizes, elementType), data,
          indexAttrs(rewriter, offsets), indexAttrs(rewriter, sizes),
          indexAttrs(rewriter, SmallVector<int64_t>(rank, 1)));
    rewriter.replaceOpWithNewOp<tensor::PadOp>(
        op, resultType, data, indexAttrs(rewriter, lowPad),
        indexAttrs(rewriter, highPad), padValue);
    return success();
  }
};

} // namespace

void vram::populatePadToLinalgPatterns(const TypeConverter &typeConverter,
                                       RewritePatternSet &patterns) {
  patterns.add<PadLowering>(typeConverter, patterns.getContext());
}
