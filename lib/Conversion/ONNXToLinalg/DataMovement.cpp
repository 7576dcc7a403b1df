//===- DataMovement.cpp - onnx shape and data-movement ops to linalg ------===//
//
// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) become
// tensor.collapse_shape / expand_shape, which bufferize to views, matching
// the ViewLikeOpInterface the onnx ops declare. Slicing ops become
// tensor.extract_slice / concat / pad, permutations linalg.transpose, and
// index-computing ops (Gather, Pad reflect/edge/wrap, Resize, Slice and Pad
// with operands computed at run time) a linalg.generic that reads its source
// with tensor.extract. Shapes are static, so Resize's per-dimension source
// indices and weights, which depend on one output coordinate only, are
// computed here, in double precision as the ONNX reference does, and passed
// to the generic as small constant tables; Pad and Slice compute theirs in
// the generic from (possibly run-time) pads, starts and steps.
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

/// A 1-d i64 constant tensor holding `values`.
Value createIndexTable(OpBuilder &builder, Location loc,
                       ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder.getI64Type());
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, values));
}

/// A 1-d constant tensor of float `elementType` holding `values`.
Value createFloatTable(OpBuilder &builder, Location loc, Type elementType,
                       ArrayRef<double> values) {
  auto floatType = cast<FloatType>(elementType);
  SmallVector<APFloat> elements;
  for (double value : values) {
    APFloat element(value);
    bool losesInfo;
    element.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &losesInfo);
    elements.push_back(element);
  }
  auto type =
      RankedTensorType::get({static_cast<int64_t>(values.size())}, elementType);
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, elements));
}

/// The map reading a 1-d table at result dimension `dim`.
AffineMap tableMap(MLIRContext *context, unsigned rank, unsigned dim) {
  return AffineMap::get(rank, 0, getAffineDimExpr(dim, context), context);
}

/// A table-driven gather: element i of the result is `source` at
/// (t_0[i_0], ..., t_{n-1}[i_{n-1}]), where t_d = tables[d], or i_d itself
/// where tables[d] is empty.
Value buildTableGather(OpBuilder &builder, Location loc, Value source,
                       RankedTensorType resultType,
                       ArrayRef<SmallVector<int64_t>> tables) {
  MLIRContext *context = builder.getContext();
  unsigned rank = resultType.getRank();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (auto [dim, table] : llvm::enumerate(tables)) {
    if (table.empty())
      continue;
    inputs.push_back(createIndexTable(builder, loc, table));
    maps.push_back(tableMap(context, rank, dim));
  }
  return buildParallelGeneric(
      builder, loc, resultType, inputs, maps,
      [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
        SmallVector<Value> indices;
        auto next = args.begin();
        for (auto [dim, table] : llvm::enumerate(tables)) {
          if (table.empty())
            indices.push_back(linalg::IndexOp::create(b, nestedLoc, dim));
          else
            indices.push_back(arith::IndexCastOp::create(
                b, nestedLoc, b.getIndexType(), *next++));
        }
        return tensor::ExtractOp::create(b, nestedLoc, source, indices);
      });
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &builder,
                                     ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t value) -> OpFoldResult {
    return builder.getIndexAttr(value);
  });
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

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

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
        lowPads.push_back(
            arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                         pad));
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
    rewriter.replaceOp(op, buildPadGather(rewriter, loc, data, resultType,
                                          mode, lowPads, *padValue));
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
    SmallVector<Value> zeros(valueType.getRank(),
                             arith::ConstantIndexOp::create(builder, loc, 0));
    return Value(tensor::ExtractOp::create(builder, loc,
                                           adaptor.getConstantValue(), zeros));
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
              inside = inside ? Value(arith::AndIOp::create(b, nestedLoc,
                                                            inside, here))
                              : here;
            } else if (mode == "reflect" && size > 1) {
              // Period 2 (size - 1): fold into [0, period), then mirror.
              Value period = constant(2 * (size - 1));
              Value folded = arith::RemSIOp::create(b, nestedLoc, source,
                                                    period);
              folded = arith::RemSIOp::create(
                  b, nestedLoc,
                  arith::AddIOp::create(b, nestedLoc, folded, period),
                  period);
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
          return arith::SelectOp::create(b, nestedLoc, inside, value,
                                         padValue);
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

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// How output index x of one dimension maps to a source coordinate, per the
/// ONNX coordinate_transformation_mode (as the ONNX reference computes it:
/// `length` is scale * input size, unrounded).
std::optional<double> sourceCoordinate(StringRef mode, double x, int64_t inSize,
                                       int64_t outSize, double scale,
                                       double roiStart, double roiEnd) {
  double length = scale * inSize;
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return length > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  if (mode == "align_corners")
    return length == 1 ? 0.0 : x * (inSize - 1) / (length - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = outSize / length;
    double offset = inSize / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "tf_crop_and_resize") {
    double span = (roiEnd - roiStart) * (inSize - 1);
    double coordinate = length == 1 ? span / 2 : x * span / (length - 1);
    return coordinate + roiStart * (inSize - 1);
  }
  return std::nullopt;
}

/// The input indices (edge-clamped into [0, inSize)) and weights one output
/// value of one dimension mixes at source coordinate `x`: linear (2 taps)
/// or cubic (4 taps) interpolation, more with antialiasing.
struct InterpolationTaps {
  SmallVector<int64_t, 4> indices;
  SmallVector<double, 4> weights;
};

/// The taps per output of one dimension: with `antialias` and a downscaling
/// `scale`, the kernel is stretched by 1 / scale, so it spans
/// 2 (1 - floor(-r / scale) - 1) taps for a kernel of radius r (1 linear,
/// 2 cubic); otherwise 2 r.
int64_t interpolationTapCount(bool cubic, bool antialias, double scale) {
  double radius = cubic ? 2 : 1;
  if (!antialias || scale >= 1)
    return 2 * radius;
  return 2 - 2 * (static_cast<int64_t>(std::floor(-radius / scale)) + 1);
}

/// As the ONNX reference interpolates: the taps are the n indices nearest
/// to x (ties to the lower one) within the input edge-padded by n/2 on each
/// side, so an integral x sits on tap n/2 with ratio 1; linear weights are
/// the triangle kernel, cubic ones Keys' kernel with parameter `cubicA`,
/// each at distance (tap - n/2 + 1 - ratio) x min(1, scale) with
/// `antialias` (then normalised to sum 1), else at the plain distance; with
/// `excludeOutside`, taps outside the input get weight 0 and the rest are
/// renormalised.
InterpolationTaps interpolationTaps(double x, int64_t inSize, bool cubic,
                                    double cubicA, bool excludeOutside,
                                    bool antialias, double scale) {
  int64_t taps = interpolationTapCount(cubic, antialias, scale);
  double floor = std::floor(x);
  double ratio = x == floor ? 1.0 : x - floor;
  int64_t first = static_cast<int64_t>(std::ceil(x)) - taps / 2;
  first = std::clamp<int64_t>(first, -taps / 2, inSize + taps / 2 - taps);
  auto kernel = [&](double d) {
    d = std::abs(d);
    if (!cubic)
      return std::max(0.0, 1 - d);
    if (d <= 1)
      return ((cubicA + 2) * d - (cubicA + 3)) * d * d + 1;
    if (d < 2)
      return ((cubicA * d - 5 * cubicA) * d + 8 * cubicA) * d - 4 * cubicA;
    return 0.0;
  };
  double stretch = antialias ? std::min(1.0, scale) : 1.0;
  SmallVector<double, 4> weights;
  double kernelSum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    weights.push_back(kernel((tap - taps / 2 + 1 - ratio) * stretch));
    kernelSum += weights.back();
  }
  InterpolationTaps result;
  double sum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    if (antialias)
      weights[tap] /= kernelSum;
    int64_t index = first + tap;
    if (excludeOutside && (index < 0 || index >= inSize))
      weights[tap] = 0;
    sum += weights[tap];
    result.indices.push_back(std::clamp<int64_t>(index, 0, inSize - 1));
  }
  for (double weight : weights)
    result.weights.push_back(excludeOutside ? weight / sum : weight);
  return result;
}

/// The most input values one Resize output mixes (the product of the
/// resized dimensions' tap counts), each unrolled into the loop body: 4096
/// covers antialiased cubic downscaling by 8 in two dimensions.
constexpr uint64_t kMaxInterpolationTerms = 4096;

class ResizeLowering : public ONNXToLinalgPattern<ONNXResizeOp> {
public:
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

protected:
  LogicalResult lower(ONNXResizeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getX();
    auto inputType = cast<RankedTensorType>(input.getType());
    auto resultType = convertTensorType(op.getY().getType());
    Type elementType = resultType.getElementType();
    int64_t rank = inputType.getRank();
    StringRef mode = op.getMode();
    StringRef transform = op.getCoordinateTransformationMode();
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      return emitLoweringError(op) << "mode '" << mode << "' is not supported";
    if (mode != "nearest" && !isa<FloatType>(elementType))
      return emitLoweringError(op) << mode << " mode needs float elements";

    // Per-dimension scales: from `scales` when it has values (exporters
    // pass an empty one alongside `sizes`), else output / input size.
    SmallVector<double> scales;
    if (!isa<NoneType>(op.getScales().getType())) {
      std::optional<SmallVector<double>> given =
          getConstantFloatValues(op.getScales());
      if (!given)
        given = getConstantFloatValues(adaptor.getScales());
      if (!given)
        return emitLoweringError(op) << "'scales' must be a constant";
      scales = std::move(*given);
    }
    if (scales.empty()) {
      for (int64_t dim = 0; dim < rank; ++dim)
        scales.push_back(double(resultType.getDimSize(dim)) /
                         inputType.getDimSize(dim));
    } else {
      if (static_cast<int64_t>(scales.size()) != rank)
        return emitLoweringError(op) << "needs one scale per dimension";
      for (int64_t dim = 0; dim < rank; ++dim)
        if (scales[dim] <= 0 || static_cast<int64_t>(std::floor(
                                    inputType.getDimSize(dim) * scales[dim])) !=
                                    resultType.getDimSize(dim))
          return emitLoweringError(op)
                 << "scale " << scales[dim] << " of dimension " << dim
                 << " does not give the result type " << resultType;
    }
    SmallVector<double> roi;
    if (transform == "tf_crop_and_resize") {
      std::optional<SmallVector<double>> given =
          isa<NoneType>(op.getRoi().getType())
              ? std::nullopt
              : getConstantFloatValues(op.getRoi());
      if (!given || static_cast<int64_t>(given->size()) != 2 * rank)
        return emitLoweringError(op)
               << "tf_crop_and_resize needs a constant roi of " << 2 * rank
               << " values";
      roi = std::move(*given);
    }

    // One entry per output index and dimension: the source coordinate.
    // Dimensions that map every index to itself need no table.
    SmallVector<SmallVector<double>> coordinates(rank);
    SmallVector<bool> identity(rank, true);
    bool extrapolates = false;
    for (int64_t dim = 0; dim < rank; ++dim) {
      int64_t inSize = inputType.getDimSize(dim);
      int64_t outSize = resultType.getDimSize(dim);
      for (int64_t x = 0; x < outSize; ++x) {
        std::optional<double> coordinate = sourceCoordinate(
            transform, x, inSize, outSize, scales[dim],
            roi.empty() ? 0.0 : roi[dim], roi.empty() ? 1.0 : roi[rank + dim]);
        if (!coordinate)
          return emitLoweringError(op) << "coordinate_transformation_mode '"
                                       << transform << "' is not supported";
        coordinates[dim].push_back(*coordinate);
        identity[dim] = identity[dim] && *coordinate == double(x);
        extrapolates |= *coordinate < 0 || *coordinate > inSize - 1;
      }
    }
    // Only tf_crop_and_resize fills outside the input; the other modes
    // clamp to the edge.
    extrapolates &= transform == "tf_crop_and_resize";

    Value result;
    if (mode == "nearest") {
      result =
          buildNearest(op, rewriter, input, resultType, coordinates, identity);
    } else {
      FailureOr<Value> interpolated = buildInterpolation(
          op, rewriter, input, resultType, coordinates, identity, scales);
      if (failed(interpolated))
        return failure();
      result = *interpolated;
    }
    if (extrapolates)
      result = applyExtrapolation(op, rewriter, result, inputType, coordinates);
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  /// Nearest: round the coordinate per nearest_mode, clamp into the input.
  static Value buildNearest(ONNXResizeOp op, OpBuilder &builder, Value input,
                            RankedTensorType resultType,
                            ArrayRef<SmallVector<double>> coordinates,
                            ArrayRef<bool> identity) {
    StringRef nearestMode = op.getNearestMode();
    auto inputType = cast<RankedTensorType>(input.getType());
    SmallVector<SmallVector<int64_t>> tables(resultType.getRank());
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      if (identity[dim])
        continue;
      int64_t inSize = inputType.getDimSize(dim);
      for (double coordinate : dimCoordinates) {
        double floor = std::floor(coordinate);
        double ratio = coordinate - floor;
        bool up;
        if (ratio == 0 || nearestMode == "floor")
          up = false;
        else if (nearestMode == "ceil")
          up = true;
        else if (nearestMode == "round_prefer_ceil")
          up = ratio >= 0.5;
        else // round_prefer_floor, the default
          up = ratio > 0.5;
        tables[dim].push_back(std::clamp<int64_t>(
            static_cast<int64_t>(floor) + (up ? 1 : 0), 0, inSize - 1));
      }
    }
    return buildTableGather(builder, op.getLoc(), input, resultType, tables);
  }

  /// Linear and cubic: the tensor product of 1-d interpolations (taps and
  /// weights from interpolationTaps) of each resized dimension. Weights are
  /// computed here in double precision and stored in the element type.
  static FailureOr<Value>
  buildInterpolation(ONNXResizeOp op, OpBuilder &builder, Value input,
                     RankedTensorType resultType,
                     ArrayRef<SmallVector<double>> coordinates,
                     ArrayRef<bool> identity, ArrayRef<double> scales) {
    Location loc = op.getLoc();
    MLIRContext *context = builder.getContext();
    auto inputType = cast<RankedTensorType>(input.getType());
    Type elementType = resultType.getElementType();
    unsigned rank = resultType.getRank();
    bool cubic = op.getMode() == "cubic";
    bool antialias = op.getAntialias() != 0;
    double cubicA = op.getCubicCoeffA().convertToDouble();
    bool excludeOutside = op.getExcludeOutside() != 0;
    // Generic inputs: per resized dimension, its taps' index tables then
    // their weight tables.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<int64_t> resized, tapCounts;
    uint64_t combinations = 1;
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      if (identity[dim])
        continue;
      int64_t taps = interpolationTapCount(cubic, antialias, scales[dim]);
      // Every combination of taps is unrolled into the loop body.
      combinations *= taps;
      if (combinations > kMaxInterpolationTerms)
        return emitLoweringError(op)
               << "interpolates more than " << kMaxInterpolationTerms
               << " input values per output (antialiasing at scales " << scales
               << ")";
      SmallVector<SmallVector<int64_t>> indices(taps);
      SmallVector<SmallVector<double>> weights(taps);
      for (double coordinate : dimCoordinates) {
        InterpolationTaps at =
            interpolationTaps(coordinate, inputType.getDimSize(dim), cubic,
                              cubicA, excludeOutside, antialias, scales[dim]);
        for (int64_t tap = 0; tap < taps; ++tap) {
          indices[tap].push_back(at.indices[tap]);
          weights[tap].push_back(at.weights[tap]);
        }
      }
      for (int64_t tap = 0; tap < taps; ++tap)
        inputs.push_back(createIndexTable(builder, loc, indices[tap]));
      for (int64_t tap = 0; tap < taps; ++tap)
        inputs.push_back(
            createFloatTable(builder, loc, elementType, weights[tap]));
      for (int64_t i = 0; i < 2 * taps; ++i)
        maps.push_back(tableMap(context, rank, dim));
      resized.push_back(dim);
      tapCounts.push_back(taps);
    }
    return buildParallelGeneric(
        builder, loc, resultType, inputs, maps,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          SmallVector<Value> position;
          for (unsigned dim = 0; dim < rank; ++dim)
            position.push_back(linalg::IndexOp::create(b, nestedLoc, dim));
          // Each combination of one tap per resized dimension: weight the
          // product of the taps' weights, value the input there.
          Value sum;
          for (uint64_t combination = 0; combination < combinations;
               ++combination) {
            Value weight;
            uint64_t rest = combination;
            ValueRange dimArgs = args;
            for (auto [dim, taps] : llvm::zip(resized, tapCounts)) {
              int64_t tap = rest % taps;
              rest /= taps;
              position[dim] = arith::IndexCastOp::create(
                  b, nestedLoc, b.getIndexType(), dimArgs[tap]);
              Value factor = dimArgs[taps + tap];
              dimArgs = dimArgs.drop_front(2 * taps);
              weight = weight ? Value(arith::MulFOp::create(b, nestedLoc,
                                                            weight, factor))
                              : factor;
            }
            Value value =
                tensor::ExtractOp::create(b, nestedLoc, input, position);
            Value term = arith::MulFOp::create(b, nestedLoc, weight, value);
            sum = sum ? Value(arith::AddFOp::create(b, nestedLoc, sum, term))
                      : term;
          }
          return sum;
        });
  }

  /// tf_crop_and_resize: outputs whose source coordinate lies outside the
  /// input in any dimension take extrapolation_value.
  static Value applyExtrapolation(ONNXResizeOp op, OpBuilder &builder,
                                  Value resized, RankedTensorType inputType,
                                  ArrayRef<SmallVector<double>> coordinates) {
    Location loc = op.getLoc();
    MLIRContext *context = builder.getContext();
    auto resultType = cast<RankedTensorType>(resized.getType());
    unsigned rank = resultType.getRank();
    SmallVector<Value> inputs = {resized};
    SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank)};
    for (auto [dim, dimCoordinates] : llvm::enumerate(coordinates)) {
      SmallVector<int64_t> inside;
      for (double coordinate : dimCoordinates)
        inside.push_back(coordinate >= 0 &&
                         coordinate <= inputType.getDimSize(dim) - 1);
      if (llvm::all_of(inside, [](int64_t flag) { return flag; }))
        continue;
      inputs.push_back(createIndexTable(builder, loc, inside));
      maps.push_back(tableMap(context, rank, dim));
    }
    double fill = op.getExtrapolationValue().convertToDouble();
    Type elementType = resultType.getElementType();
    return buildParallelGeneric(
        builder, loc, resultType, inputs, maps,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          Value zero = createScalarConstant(b, nestedLoc, b.getI64Type(), 0);
          Value result = args[0];
          Value fillValue =
              createScalarConstant(b, nestedLoc, elementType, fill);
          for (Value inside : args.drop_front()) {
            Value isInside = arith::CmpIOp::create(
                b, nestedLoc, arith::CmpIPredicate::ne, inside, zero);
            result = arith::SelectOp::create(b, nestedLoc, isInside, result,
                                             fillValue);
          }
          return result;
        });
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
               GatherLowering, PadLowering, ResizeLowering>(
      typeConverter, patterns.getContext());
}
