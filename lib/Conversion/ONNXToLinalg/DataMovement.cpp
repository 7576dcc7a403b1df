//===- DataMovement.cpp - onnx shape and data-movement ops to linalg ------===//
//
// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) become
// tensor.collapse_shape / expand_shape, which bufferize to views, matching
// the ViewLikeOpInterface the onnx ops declare. Slicing ops become
// tensor.extract_slice / concat / pad, permutations linalg.transpose, and
// index-computing ops (Gather, Slice with operands computed at run time) a
// linalg.generic that reads its source with tensor.extract. Pad and Resize
// are in Pad.cpp and Resize.cpp.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// Replaces `op` by its operand reshaped to the result type, after checking
/// that the element counts agree (the result type comes from ONNX shape
/// inference; the reshape must not invent or drop elements).
LogicalResult replaceWithReshape(Operation *op, Value input,
                                 RankedTensorType resultType,
                                 ConversionPatternRewriter &rewriter) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getNumElements() != resultType.getNumElements())
    return emitLoweringError(op)
           << "cannot reshape " << inputType << " to " << resultType;
  rewriter.replaceOp(op,
                     reshapeTensor(rewriter, op->getLoc(), input, resultType));
  return success();
}

/// An optional integer-list input that must be constant; `fallback` when it
/// is absent.
FailureOr<SmallVector<int64_t>>
getConstantListOperand(Operation *op, Value original, Value converted,
                       StringRef name, ArrayRef<int64_t> fallback) {
  if (isa<NoneType>(original.getType()))
    return SmallVector<int64_t>(fallback);
  std::optional<SmallVector<int64_t>> values =
      getConstantIntValues(original, converted);
  if (!values) {
    emitLoweringError(op) << "'" << name << "' must be a constant";
    return failure();
  }
  return *values;
}

//===----------------------------------------------------------------------===//
// Constant, Shape, Identity and the reshapes
//===----------------------------------------------------------------------===//

class ConstantLowering : public ONNXToLinalgPattern<ONNXConstantOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXConstantOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto resultType = convertTensorType(op.getOutput().getType());
    if (!resultType.getElementType().isIntOrFloat())
      return emitLoweringError(op)
             << "constants of " << resultType.getElementType()
             << " have no arith representation";
    auto value = cast<TypedAttr>(op.getValue());
    if (value.getType() != resultType) {
      // Unsigned data under its signless type: the same bits.
      auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
      if (!dense)
        return emitLoweringError(op) << "cannot retype " << op.getValue();
      value = dense.bitcast(resultType.getElementType());
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, resultType, value);
    return success();
  }
};

class ShapeLowering : public ONNXToLinalgPattern<ONNXShapeOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXShapeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(adaptor.getData().getType()).getShape();
    int64_t rank = shape.size();
    // start and end count from the back when negative and are clamped to
    // [0, rank]; an empty range gives an empty shape.
    auto clampToRank = [&](int64_t index) {
      if (index < 0)
        index += rank;
      return std::clamp<int64_t>(index, 0, rank);
    };
    int64_t start = clampToRank(static_cast<int64_t>(op.getStart()));
    int64_t end = rank;
    if (std::optional<uint64_t> given = op.getEnd())
      end = clampToRank(static_cast<int64_t>(*given));
    end = std::max(start, end);
    auto resultType = convertTensorType(op.getShape().getType());
    if (resultType.getShape() != ArrayRef<int64_t>{end - start} ||
        !resultType.getElementType().isInteger(64))
      return emitLoweringError(op)
             << "result type " << resultType << " is not tensor<" << end - start
             << "xi64>";
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op,
        DenseElementsAttr::get(resultType, shape.slice(start, end - start)));
    return success();
  }
};

class IdentityLowering : public ONNXToLinalgPattern<ONNXIdentityOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXIdentityOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

class ReshapeLowering : public ONNXToLinalgPattern<ONNXReshapeOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXReshapeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getReshaped().getType());
    // A constant shape is checked against the inferred result type with
    // ONNX's rules (0 copies the input dimension unless allowzero, -1 takes
    // the rest); a computed shape relies on the static result type.
    if (std::optional<SmallVector<int64_t>> shape =
            getConstantIntValues(op.getShape(), adaptor.getShape())) {
      SmallVector<int64_t> target;
      int64_t inferred = -1, known = 1;
      for (auto [dim, size] : llvm::enumerate(*shape)) {
        if (size == 0 && op.getAllowzero() == 0) {
          if (static_cast<int64_t>(dim) >= inputType.getRank())
            return emitLoweringError(op)
                   << "shape entry " << dim << " is 0 but the input has rank "
                   << inputType.getRank();
          size = inputType.getDimSize(dim);
        } else if (size == -1) {
          if (inferred >= 0)
            return emitLoweringError(op) << "shape has more than one -1";
          inferred = dim;
        } else if (size < 0) {
          return emitLoweringError(op)
                 << "shape entry " << size << " is negative";
        }
        if (size != -1)
          known *= size;
        target.push_back(size);
      }
      if (inferred >= 0) {
        if (known == 0 || inputType.getNumElements() % known != 0)
          return emitLoweringError(op) << "cannot infer the -1 dimension";
        target[inferred] = inputType.getNumElements() / known;
      }
      if (ArrayRef<int64_t>(target) != resultType.getShape())
        return emitLoweringError(op)
               << "shape operand gives "
               << RankedTensorType::get(target, resultType.getElementType())
               << ", the result type is " << resultType;
    }
    return replaceWithReshape(op, adaptor.getData(), resultType, rewriter);
  }
};

/// Flatten, Squeeze, Unsqueeze: the result type says everything.
template <typename OpTy>
class ResultTypeReshapeLowering : public ONNXToLinalgPattern<OpTy> {
public:
  using ONNXToLinalgPattern<OpTy>::ONNXToLinalgPattern;
  using OpAdaptor = typename ONNXToLinalgPattern<OpTy>::OpAdaptor;

protected:
  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    return replaceWithReshape(
        op, adaptor.getOperands().front(),
        this->convertTensorType(op->getResult(0).getType()), rewriter);
  }
};

//===----------------------------------------------------------------------===//
// Transpose, Concat, Split, Slice, Expand
//===----------------------------------------------------------------------===//

class TransposeLowering : public ONNXToLinalgPattern<ONNXTransposeOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXTransposeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getTransposed().getType());
    int64_t rank = inputType.getRank();
    SmallVector<int64_t> perm;
    if (std::optional<ArrayAttr> attr = op.getPerm()) {
      for (Attribute dim : *attr)
        perm.push_back(cast<IntegerAttr>(dim).getInt());
    } else {
      for (int64_t dim = rank - 1; dim >= 0; --dim)
        perm.push_back(dim);
    }
    SmallVector<int64_t> sorted(perm);
    llvm::sort(sorted);
    if (sorted != llvm::to_vector(llvm::seq<int64_t>(0, rank)))
      return emitLoweringError(op)
             << "perm is not a permutation of 0.." << rank - 1;
    rewriter.replaceOp(
        op, linalg::TransposeOp::create(
                rewriter, op.getLoc(), adaptor.getData(),
                createEmptyTensor(rewriter, op.getLoc(), resultType), perm)
                .getResult()
                .front());
    return success();
  }
};

class ConcatLowering : public ONNXToLinalgPattern<ONNXConcatOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXConcatOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto resultType = convertTensorType(op.getConcatResult().getType());
    FailureOr<int64_t> axis = normalizeAxis(
        op, static_cast<int64_t>(op.getAxis()), resultType.getRank());
    if (failed(axis))
      return failure();
    // Empty inputs add nothing; tensor.concat's insert_slice would reject
    // the offset of one at the end of the dimension.
    SmallVector<Value> inputs;
    for (Value input : adaptor.getInputs())
      if (cast<RankedTensorType>(input.getType()).getNumElements() != 0)
        inputs.push_back(input);
    if (inputs.empty()) {
      rewriter.replaceOp(op,
                         createEmptyTensor(rewriter, op.getLoc(), resultType));
      return success();
    }
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, inputs.front());
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, resultType, *axis,
                                                  inputs);
    return success();
  }
};

class SplitLowering : public ONNXToLinalgPattern<ONNXSplitOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXSplitOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    FailureOr<int64_t> axis = normalizeAxis(
        op, static_cast<int64_t>(op.getAxis()), inputType.getRank());
    if (failed(axis))
      return failure();
    int64_t extent = inputType.getDimSize(*axis);
    int64_t parts = op.getOutputs().size();
    // Split-13: sizes from the `split` input, else equal parts. A `split`
    // computed at run time must agree with the static result types, so they
    // say what it holds.
    std::optional<SmallVector<int64_t>> sizes;
    if (isa<NoneType>(op.getSplit().getType())) {
      if (extent % parts != 0)
        return emitLoweringError(op)
               << "dimension " << extent << " does not split into " << parts
               << " equal parts";
      sizes = SmallVector<int64_t>(parts, extent / parts);
    } else {
      sizes = getConstantIntValues(op.getSplit(), adaptor.getSplit());
      if (!sizes) {
        sizes.emplace();
        for (Value result : op.getOutputs())
          sizes->push_back(
              convertTensorType(result.getType()).getDimSize(*axis));
      }
    }
    int64_t total = 0;
    for (int64_t size : *sizes)
      total += size;
    if (static_cast<int64_t>(sizes->size()) != parts || total != extent)
      return emitLoweringError(op) << "split sizes do not partition the "
                                      "dimension of size "
                                   << extent << " into " << parts << " parts";

    SmallVector<Value> results;
    SmallVector<int64_t> offsets(inputType.getRank(), 0);
    SmallVector<int64_t> strides(inputType.getRank(), 1);
    for (auto [result, size] : llvm::zip(op.getOutputs(), *sizes)) {
      auto resultType = convertTensorType(result.getType());
      if (resultType.getDimSize(*axis) != size)
        return emitLoweringError(op) << "result type " << resultType
                                     << " disagrees with split size " << size;
      // An empty part reads nothing; tensor.extract_slice would reject its
      // offset when it is the end of the dimension.
      results.push_back(
          resultType.getNumElements() == 0
              ? createEmptyTensor(rewriter, op.getLoc(), resultType)
              : Value(tensor::ExtractSliceOp::create(
                    rewriter, op.getLoc(), resultType, adaptor.getInput(),
                    indexAttrs(rewriter, offsets),
                    indexAttrs(rewriter, resultType.getShape()),
                    indexAttrs(rewriter, strides))));
      offsets[*axis] += size;
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

class SliceLowering : public ONNXToLinalgPattern<ONNXSliceOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXSliceOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getOutput().getType());
    int64_t rank = inputType.getRank();
    auto isKnown = [](Value original, Value converted) {
      return isa<NoneType>(original.getType()) ||
             getConstantIntValues(original, converted).has_value();
    };
    if (!isKnown(op.getStarts(), adaptor.getStarts()) ||
        !isKnown(op.getEnds(), adaptor.getEnds()) ||
        !isKnown(op.getAxes(), adaptor.getAxes()) ||
        !isKnown(op.getSteps(), adaptor.getSteps()))
      return lowerComputedSlice(op, adaptor, rewriter);
    FailureOr<SmallVector<int64_t>> starts = getConstantListOperand(
        op, op.getStarts(), adaptor.getStarts(), "starts", {});
    FailureOr<SmallVector<int64_t>> ends =
        getConstantListOperand(op, op.getEnds(), adaptor.getEnds(), "ends", {});
    if (failed(starts) || failed(ends))
      return failure();
    FailureOr<SmallVector<int64_t>> axes = getConstantListOperand(
        op, op.getAxes(), adaptor.getAxes(), "axes",
        llvm::to_vector(llvm::seq<int64_t>(0, starts->size())));
    if (failed(axes))
      return failure();
    FailureOr<SmallVector<int64_t>> steps =
        getConstantListOperand(op, op.getSteps(), adaptor.getSteps(), "steps",
                               SmallVector<int64_t>(starts->size(), 1));
    if (failed(steps))
      return failure();
    if (ends->size() != starts->size() || axes->size() != starts->size() ||
        steps->size() != starts->size())
      return emitLoweringError(op)
             << "starts, ends, axes and steps differ in length";
    FailureOr<SmallVector<int64_t>> normalizedAxes =
        normalizeAxes(op, *axes, rank);
    if (failed(normalizedAxes))
      return failure();

    // Per ONNX: negative starts/ends count from the back, then clamp to
    // [0, dim] for positive steps and [-1, dim - 1] (start: [0, dim - 1])
    // for negative ones. A negative step is sliced forward from the last
    // selected element and then reversed.
    SmallVector<int64_t> offsets(rank, 0), sizes(inputType.getShape()),
        strides(rank, 1);
    SmallVector<bool> reversed(rank, false);
    for (auto [i, axis] : llvm::enumerate(*normalizedAxes)) {
      int64_t dim = inputType.getDimSize(axis);
      int64_t start = (*starts)[i], end = (*ends)[i], step = (*steps)[i];
      if (step == 0)
        return emitLoweringError(op) << "step 0 on axis " << axis;
      if (start < 0)
        start += dim;
      if (end < 0)
        end += dim;
      int64_t size;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        size = end > start ? (end - start + step - 1) / step : 0;
        offsets[axis] = start;
        strides[axis] = step;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        size = start > end ? (start - end - step - 1) / -step : 0;
        offsets[axis] = size > 0 ? start + (size - 1) * step : 0;
        strides[axis] = -step;
        reversed[axis] = size > 1;
      }
      sizes[axis] = size;
      // An empty slice starts anywhere; tensor.extract_slice wants an offset
      // inside the dimension.
      if (size == 0)
        offsets[axis] = 0;
    }
    if (ArrayRef<int64_t>(sizes) != resultType.getShape())
      return emitLoweringError(op)
             << "the slice has shape "
             << RankedTensorType::get(sizes, resultType.getElementType())
             << ", the result type is " << resultType;

    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, resultType, adaptor.getData(),
        indexAttrs(rewriter, offsets), indexAttrs(rewriter, sizes),
        indexAttrs(rewriter, strides));
    if (llvm::is_contained(reversed, true)) {
      // Reverse the negative-step axes: read index size-1-i.
      MLIRContext *context = rewriter.getContext();
      SmallVector<AffineExpr> exprs;
      for (int64_t dim = 0; dim < rank; ++dim) {
        AffineExpr index = getAffineDimExpr(dim, context);
        exprs.push_back(reversed[dim] ? sizes[dim] - 1 - index : index);
      }
      slice = buildParallelGeneric(
          rewriter, loc, resultType, ValueRange{slice},
          {AffineMap::get(rank, 0, exprs, context)},
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    }
    rewriter.replaceOp(op, slice);
    return success();
  }

private:
  /// Starts, ends, axes or steps computed at run time. The static result
  /// type fixes the sizes, so `ends` is not read (the run-time values must
  /// agree with it, as shape inference assumed); per dimension, a run-time
  /// offset and step follow
  /// from the entries whose axis is that dimension, normalised and clamped
  /// as ONNX does, and a gather reads data[offset + i * step], which covers
  /// negative steps too.
  LogicalResult lowerComputedSlice(ONNXSliceOp op, OpAdaptor adaptor,
                                   ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(adaptor.getData().getType());
    auto resultType = convertTensorType(op.getOutput().getType());
    int64_t rank = inputType.getRank();
    auto startsType = dyn_cast<RankedTensorType>(adaptor.getStarts().getType());
    if (!startsType || startsType.getRank() != 1 ||
        !startsType.hasStaticShape())
      return emitLoweringError(op)
             << "'starts' computed at run time needs a static length";
    int64_t entries = startsType.getDimSize(0);
    for (Value operand : {adaptor.getAxes(), adaptor.getSteps()}) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (type && type.getShape() != startsType.getShape())
        return emitLoweringError(op)
               << "starts, axes and steps differ in length";
    }

    Type i64 = rewriter.getI64Type();
    auto constant = [&](int64_t value) -> Value {
      return arith::ConstantIntOp::create(rewriter, loc, i64, value);
    };
    // Entry `i` of an optional list operand as i64, `fallback` if absent.
    auto entry = [&](Value operand, int64_t i, int64_t fallback) -> Value {
      if (isa<NoneType>(operand.getType()))
        return constant(fallback);
      Value index = arith::ConstantIndexOp::create(rewriter, loc, i);
      Value value = tensor::ExtractOp::create(rewriter, loc, operand, index);
      if (value.getType() != i64)
        value = arith::ExtSIOp::create(rewriter, loc, i64, value);
      return value;
    };
    using Predicate = arith::CmpIPredicate;
    auto compare = [&](Predicate predicate, Value lhs, Value rhs) -> Value {
      return arith::CmpIOp::create(rewriter, loc, predicate, lhs, rhs);
    };
    auto select = [&](Value condition, Value ifTrue, Value ifFalse) -> Value {
      return arith::SelectOp::create(rewriter, loc, condition, ifTrue,
                                     ifFalse);
    };
    Value zero = constant(0), one = constant(1);
    SmallVector<Value> offsets(rank, zero), steps(rank, one);
    for (int64_t i = 0; i < entries; ++i) {
      Value axis = entry(adaptor.getAxes(), i, i);
      axis = select(compare(Predicate::slt, axis, zero),
                    arith::AddIOp::create(rewriter, loc, axis, constant(rank)),
                    axis);
      Value start = entry(adaptor.getStarts(), i, 0);
      Value step = entry(adaptor.getSteps(), i, 1);
      Value forward = compare(Predicate::sgt, step, zero);
      for (int64_t dim = 0; dim < rank; ++dim) {
        // Negative starts count from the back, then clamp to [0, size]
        // (forward) or [0, size - 1] (backward).
        int64_t size = inputType.getDimSize(dim);
        Value fromBack = arith::AddIOp::create(rewriter, loc, start,
                                               constant(size));
        Value offset =
            select(compare(Predicate::slt, start, zero), fromBack, start);
        Value upper = select(forward, constant(size), constant(size - 1));
        offset = arith::MaxSIOp::create(
            rewriter, loc, zero,
            arith::MinSIOp::create(rewriter, loc, offset, upper));
        Value here = compare(Predicate::eq, axis, constant(dim));
        offsets[dim] = select(here, offset, offsets[dim]);
        steps[dim] = select(here, step, steps[dim]);
      }
    }
    Value data = adaptor.getData();
    rewriter.replaceOp(
        op, buildParallelGeneric(
                rewriter, loc, resultType, ValueRange{}, {},
                [&](OpBuilder &b, Location nestedLoc, ValueRange) -> Value {
                  SmallVector<Value> position;
                  for (int64_t dim = 0; dim < rank; ++dim) {
                    Value index = arith::IndexCastOp::create(
                        b, nestedLoc, i64,
                        linalg::IndexOp::create(b, nestedLoc, dim));
                    Value source = arith::AddIOp::create(
                        b, nestedLoc, offsets[dim],
                        arith::MulIOp::create(b, nestedLoc, index,
                                              steps[dim]));
                    position.push_back(arith::IndexCastOp::create(
                        b, nestedLoc, b.getIndexType(), source));
                  }
                  return tensor::ExtractOp::create(b, nestedLoc, data,
                                                   position);
                }));
    return success();
  }
};

/// Trilu: element (..., i, j) is kept where j - i >= k (upper) or
/// j - i <= k (lower), else 0; k is read at run time (0 when absent).
class TriluLowering : public ONNXToLinalgPattern<ONNXTriluOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXTriluOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto resultType = convertTensorType(op.getOutput().getType());
    int64_t rank = resultType.getRank();
    if (rank < 2)
      return emitLoweringError(op) << "expects at least 2 dimensions";
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    Value k = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
    if (!isa<NoneType>(adaptor.getK().getType())) {
      auto kType = cast<RankedTensorType>(adaptor.getK().getType());
      if (kType.getNumElements() != 1 || !kType.getElementType().isInteger(64))
        return emitLoweringError(op) << "k must be one int64";
      k = extractOnlyElement(rewriter, loc, adaptor.getK());
    }
    bool upper = op.getUpper() != 0;
    Type elementType = resultType.getElementType();
    rewriter.replaceOp(
        op,
        buildElementwiseGeneric(
            rewriter, loc, resultType, ValueRange{adaptor.getInput()},
            [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
              auto index = [&](int64_t dim) -> Value {
                return arith::IndexCastOp::create(
                    b, nestedLoc, i64,
                    linalg::IndexOp::create(b, nestedLoc, dim));
              };
              Value offset = arith::SubIOp::create(
                  b, nestedLoc, index(rank - 1), index(rank - 2));
              Value keep = arith::CmpIOp::create(
                  b, nestedLoc,
                  upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
                  offset, k);
              Value zero = arith::ConstantOp::create(
                  b, nestedLoc, b.getZeroAttr(elementType));
              return arith::SelectOp::create(b, nestedLoc, keep, args[0], zero);
            }));
    return success();
  }
};

/// Range (an onnx.Node: short ones fold to constants, see Folding.cpp):
/// element i is start + i * delta, start and delta read at run time; the
/// length is the result's static size, which the importer inferred from
/// the operands (position ids of a 4,096-token context do not fold).
class RangeNodeLowering : public OpConversionPattern<ONNXNodeOp> {
public:
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ONNXNodeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getOpType() != "Range" || !op.getDomain().empty() ||
        op.getNumOperands() != 3 || op.getNumResults() != 1)
      return failure();
    if (failed(verifyStaticShapes(op)))
      return failure();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult(0).getType()));
    if (resultType.getRank() != 1)
      return emitLoweringError(op) << "Range makes a 1-d tensor";
    Type elementType = resultType.getElementType();
    if (!isa<IntegerType, FloatType>(elementType))
      return emitLoweringError(op) << "Range of " << elementType;
    Location loc = op.getLoc();
    for (Value operand : adaptor.getInputs())
      if (auto type = dyn_cast<RankedTensorType>(operand.getType());
          !type || type.getNumElements() != 1 ||
          type.getElementType() != elementType)
        return emitLoweringError(op)
               << "start, limit and delta must be scalars of " << elementType;
    Value start = extractOnlyElement(rewriter, loc, adaptor.getInputs()[0]);
    Value delta = extractOnlyElement(rewriter, loc, adaptor.getInputs()[2]);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{},
        ValueRange{createEmptyTensor(rewriter, loc, resultType)},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(1)},
        getParallelIterators(1),
        [&](OpBuilder &b, Location nestedLoc, ValueRange) {
          Value index = linalg::IndexOp::create(b, nestedLoc, 0);
          Value step;
          if (isa<IntegerType>(elementType)) {
            step = arith::IndexCastOp::create(b, nestedLoc, elementType, index);
            step = arith::MulIOp::create(b, nestedLoc, step, delta);
            step = arith::AddIOp::create(b, nestedLoc, start, step);
          } else {
            Value count =
                arith::IndexCastOp::create(b, nestedLoc, b.getI64Type(), index);
            step = arith::SIToFPOp::create(b, nestedLoc, elementType, count);
            step = arith::MulFOp::create(b, nestedLoc, step, delta);
            step = arith::AddFOp::create(b, nestedLoc, start, step);
          }
          linalg::YieldOp::create(b, nestedLoc, step);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

class ExpandLowering : public ONNXToLinalgPattern<ONNXExpandOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXExpandOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
    auto resultType = convertTensorType(op.getOutput().getType());
    ArrayRef<int64_t> in = inputType.getShape(), out = resultType.getShape();
    bool broadcastable = in.size() <= out.size();
    for (size_t i = 0; broadcastable && i < in.size(); ++i) {
      int64_t outSize = out[out.size() - in.size() + i];
      broadcastable = in[i] == outSize || in[i] == 1;
    }
    if (!broadcastable)
      return emitLoweringError(op)
             << inputType << " does not broadcast to " << resultType;
    // The input is read through a broadcasting map, not copied first.
    rewriter.replaceOp(
        op,
        buildElementwiseGeneric(
            rewriter, op.getLoc(), resultType, ValueRange{adaptor.getInput()},
            [](OpBuilder &, Location, ValueRange args) { return args[0]; }));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

class GatherLowering : public ONNXToLinalgPattern<ONNXGatherOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXGatherOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    MLIRContext *context = rewriter.getContext();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    auto resultType = convertTensorType(op.getOutput().getType());
    FailureOr<int64_t> axis = normalizeAxis(
        op, static_cast<int64_t>(op.getAxis()), dataType.getRank());
    if (failed(axis))
      return failure();
    if (!isa<IntegerType>(indicesType.getElementType()))
      return emitLoweringError(op) << "indices must be integers";
    // Output dims: data[:axis] ++ indices ++ data[axis+1:].
    int64_t indicesRank = indicesType.getRank();
    if (resultType.getRank() != dataType.getRank() - 1 + indicesRank)
      return emitLoweringError(op) << "result rank does not match";
    SmallVector<AffineExpr> indexExprs;
    for (int64_t dim = 0; dim < indicesRank; ++dim)
      indexExprs.push_back(getAffineDimExpr(*axis + dim, context));
    AffineMap indicesMap =
        AffineMap::get(resultType.getRank(), 0, indexExprs, context);
    int64_t extent = dataType.getDimSize(*axis);
    if (failed(checkConstantIndices(op, op.getIndices(), adaptor.getIndices(),
                                    IndexedAxis{*axis, extent})))
      return failure();
    Value gathered = buildParallelGeneric(
        rewriter, op.getLoc(), resultType, ValueRange{adaptor.getIndices()},
        {indicesMap},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value index = wrapIndex(b, loc, args[0], extent);
          SmallVector<Value> position;
          for (int64_t dim = 0; dim < dataType.getRank(); ++dim) {
            if (dim < *axis)
              position.push_back(linalg::IndexOp::create(b, loc, dim));
            else if (dim == *axis)
              position.push_back(index);
            else
              position.push_back(
                  linalg::IndexOp::create(b, loc, dim - 1 + indicesRank));
          }
          return tensor::ExtractOp::create(b, loc, data, position);
        });
    rewriter.replaceOp(op, gathered);
    return success();
  }
};

} // namespace

void vram::populateDataMovementToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<ConstantLowering, ShapeLowering, IdentityLowering,
               ReshapeLowering, ResultTypeReshapeLowering<ONNXFlattenOp>,
               ResultTypeReshapeLowering<ONNXSqueezeOp>,
               ResultTypeReshapeLowering<ONNXUnsqueezeOp>, TransposeLowering,
               ConcatLowering, SplitLowering, SliceLowering, ExpandLowering,
               GatherLowering, TriluLowering, RangeNodeLowering>(
      typeConverter, patterns.getContext());
}
