//===- Training.cpp - the training step's own ops to linalg/scf -----------===//
//
// The ops vram-train adds to a graph beyond inference ones: Greater builds
// the ReLU masks (an elementwise comparison), ScatterElements the gradients
// of Gather, vram.update and vram.increment the in-place optimizer step.
// A scatter writes at data-dependent positions, which no linalg indexing
// map can express, so `data` (or a copy of it, when other ops read it) is
// threaded through an scf.for nest over `indices`, one tensor.extract /
// tensor.insert per update; bufferization turns it into in-place stores.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// C = A > B with numpy broadcasting; floats compare ordered (NaN is never
/// greater), integers by the signedness of the onnx operand type.
struct GreaterLowering : ONNXToLinalgPattern<ONNXGreaterOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXGreaterOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    Type onnxElement = getElementTypeOrSelf(op.getA().getType());
    if (onnxElement != getElementTypeOrSelf(op.getB().getType()))
      return emitLoweringError(op) << "A and B have different element types";
    bool isUnsigned = isUnsignedOrBool(onnxElement);
    Value result = buildElementwiseGeneric(
        rewriter, op.getLoc(), convertTensorType(op.getC().getType()),
        {adaptor.getA(), adaptor.getB()},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          if (isa<FloatType>(args[0].getType()))
            return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         args[0], args[1]);
          return arith::CmpIOp::create(b, loc,
                                       isUnsigned ? arith::CmpIPredicate::ugt
                                                  : arith::CmpIPredicate::sgt,
                                       args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// output = data, then for every position q of `indices`:
/// output[q with q[axis] = indices[q]] (op)= updates[q], in row-major order
/// of q, so with reduction "none" the last of repeated targets wins.
struct ScatterElementsLowering : ONNXToLinalgPattern<ONNXScatterElementsOp> {
  using ONNXToLinalgPattern::ONNXToLinalgPattern;

  LogicalResult
  lower(ONNXScatterElementsOp op, OpAdaptor adaptor,
        ConversionPatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    auto updatesType = cast<RankedTensorType>(adaptor.getUpdates().getType());
    int64_t rank = dataType.getRank();
    if (indicesType.getRank() != rank)
      return emitLoweringError(op) << "indices must have the rank of data ("
                                   << rank << ")";
    if (indicesType.getShape() != updatesType.getShape())
      return emitLoweringError(op) << "indices and updates differ in shape";
    if (updatesType.getElementType() != dataType.getElementType())
      return emitLoweringError(op)
             << "updates and data differ in element type";
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
    if (failed(checkConstantIndices(op, op.getIndices(), adaptor.getIndices(),
                                    *axis, dataType.getDimSize(*axis))))
      return failure();
    StringRef reduction = op.getReduction();
    Type elementType = dataType.getElementType();
    bool isFloat = isa<FloatType>(elementType);
    bool isUnsigned =
        getElementTypeOrSelf(op.getData().getType()).isUnsignedInteger();
    // How an update combines with the element it lands on (max and min as
    // numpy's: a NaN wins).
    std::optional<arith::AtomicRMWKind> combine;
    if (reduction == "add")
      combine =
          isFloat ? arith::AtomicRMWKind::addf : arith::AtomicRMWKind::addi;
    else if (reduction == "mul")
      combine =
          isFloat ? arith::AtomicRMWKind::mulf : arith::AtomicRMWKind::muli;
    else if (reduction == "max")
      combine = isFloat      ? arith::AtomicRMWKind::maximumf
                : isUnsigned ? arith::AtomicRMWKind::maxu
                             : arith::AtomicRMWKind::maxs;
    else if (reduction == "min")
      combine = isFloat      ? arith::AtomicRMWKind::minimumf
                : isUnsigned ? arith::AtomicRMWKind::minu
                             : arith::AtomicRMWKind::mins;
    else if (reduction != "none")
      return emitLoweringError(op) << "reduction '" << reduction
                                   << "' is not one of none, add, mul, max, "
                                      "min";

    Location loc = op.getLoc();
    // A copy keeps `data` itself intact for its other users; without any,
    // bufferization updates it in place.
    Value copy = op.updatesDataInPlace()
                     ? adaptor.getData()
                     : linalg::CopyOp::create(
                           rewriter, loc, adaptor.getData(),
                           createEmptyTensor(rewriter, loc, dataType))
                           .getResult(0);
    if (indicesType.getNumElements() == 0) {
      rewriter.replaceOp(op, copy);
      return success();
    }
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value axisSize =
        arith::ConstantIndexOp::create(rewriter, loc, dataType.getDimSize(*axis));
    SmallVector<Value> upperBounds;
    for (int64_t size : indicesType.getShape())
      upperBounds.push_back(arith::ConstantIndexOp::create(rewriter, loc, size));
    SmallVector<Value> steps(rank, one);
    SmallVector<Value> lowerBounds(rank, zero);
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lowerBounds, upperBounds, steps, ValueRange{copy},
        [&](OpBuilder &b, Location nloc, ValueRange ivs,
            ValueRange iterArgs) -> scf::ValueVector {
          Value index = tensor::ExtractOp::create(b, nloc, adaptor.getIndices(),
                                                  ivs);
          index = arith::IndexCastOp::create(b, nloc, b.getIndexType(), index);
          // ONNX allows negative indices counting from the end of the axis.
          Value isNegative = arith::CmpIOp::create(
              b, nloc, arith::CmpIPredicate::slt, index, zero);
          index = arith::SelectOp::create(
              b, nloc, isNegative,
              arith::AddIOp::create(b, nloc, index, axisSize), index);
          SmallVector<Value> target(ivs);
          target[*axis] = index;
          Value update = tensor::ExtractOp::create(b, nloc,
                                                   adaptor.getUpdates(), ivs);
          if (combine) {
            Value current =
                tensor::ExtractOp::create(b, nloc, iterArgs[0], target);
            update = arith::getReductionOp(*combine, b, nloc, current, update);
          }
          return {tensor::InsertOp::create(b, nloc, update, iterArgs[0],
                                           target)
                      .getResult()};
        });
    rewriter.replaceOp(op, nest.results.front());
    return success();
  }
};

/// vram.update -> one linalg.generic whose outs are the parameter and its
/// state: bufferization writes them where they live. The step count and the
/// clipping factor are 0-d inputs broadcast to every element (no host code
/// reads them: on GPU they live in device memory); the bias corrections
/// are loop-invariant, which LLVM hoists. The arithmetic is in f32 for half
/// tensors, rounded once. Accumulating, every element also computes the
/// update and selects, by the micro-batch count, between it and the old
/// values: no branch, the same code on every call.
struct UpdateLowering : OpConversionPattern<UpdateOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(UpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    UpdateRule rule = op.getRule();
    double learningRate = op.getLearningRate().convertToDouble();
    double weightDecay = op.getWeightDecay().convertToDouble();
    double momentum = op.getMomentum().convertToDouble();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double epsilon = op.getEpsilon().convertToDouble();
    int64_t accumulate = op.getAccumulate();

    auto type = cast<RankedTensorType>(op.getGradient().getType());
    Type element = type.getElementType();
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    AffineMap broadcast =
        AffineMap::get(type.getRank(), 0, rewriter.getContext());
    SmallVector<Value> inputs{adaptor.getGradient()};
    SmallVector<AffineMap> maps{identity};
    for (Value scalar : {adaptor.getStep(), adaptor.getScale()})
      if (scalar) {
        inputs.push_back(scalar);
        maps.push_back(broadcast);
      }
    maps.append(adaptor.getInits().size(), identity);
    bool hasStep = bool(adaptor.getStep()), hasScale = bool(adaptor.getScale());

    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange(ValueRange(adaptor.getInits())), inputs,
        adaptor.getInits(), maps, getParallelIterators(type.getRank()),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          auto c = [&](double value) -> Value {
            return arith::ConstantOp::create(b, nloc, b.getF32FloatAttr(value));
          };
          auto add = [&](Value x, Value y) -> Value {
            return arith::AddFOp::create(b, nloc, x, y);
          };
          auto sub = [&](Value x, Value y) -> Value {
            return arith::SubFOp::create(b, nloc, x, y);
          };
          auto mul = [&](Value x, Value y) -> Value {
            return arith::MulFOp::create(b, nloc, x, y);
          };
          auto div = [&](Value x, Value y) -> Value {
            return arith::DivFOp::create(b, nloc, x, y);
          };
          auto widen = [&](Value value) -> Value {
            return value.getType() == f32
                       ? value
                       : arith::ExtFOp::create(b, nloc, f32, value).getResult();
          };
          unsigned next = 0;
          Value grad = widen(args[next++]);
          Value step = hasStep ? args[next++] : Value();
          Value scale = hasScale ? args[next++] : Value();
          ValueRange inits = args.drop_front(next);
          SmallVector<Value> state;
          for (Value arg : inits)
            state.push_back(widen(arg));
          Value param = state[0];
          // Accumulating: the sum so far plus this micro-batch's gradient;
          // the rule sees their mean, and Adam the count of real steps.
          Value accumulated, completesStep;
          if (accumulate > 1) {
            accumulated = add(state.pop_back_val(), grad);
            grad = mul(accumulated, c(1.0 / double(accumulate)));
            // floor(count / N) N == count, exact for counts below 2^24
            // (remf has no NVVM lowering).
            Value microBatches = step;
            step = div(microBatches, c(double(accumulate)));
            completesStep =
                arith::CmpFOp::create(b, nloc, arith::CmpFPredicate::OEQ,
                                      mul(math::FloorOp::create(b, nloc, step),
                                          c(double(accumulate))),
                                      microBatches);
          }
          if (scale)
            grad = mul(grad, scale);
          if (weightDecay != 0.0 && rule != UpdateRule::AdamW)
            grad = add(grad, mul(param, c(weightDecay)));
          SmallVector<Value> updated;
          switch (rule) {
          case UpdateRule::SGD:
            updated = {sub(param, mul(grad, c(learningRate)))};
            break;
          case UpdateRule::Momentum: {
            Value velocity = add(mul(state[1], c(momentum)), grad);
            updated = {sub(param, mul(velocity, c(learningRate))), velocity};
            break;
          }
          case UpdateRule::Adam:
          case UpdateRule::AdamW: {
            // 1 - beta^t in f32: in bf16, 0.999 rounds to 1.
            auto correction = [&](double beta) {
              return sub(c(1.0), math::PowFOp::create(b, nloc, c(beta), step));
            };
            Value m = add(mul(state[1], c(beta1)), mul(grad, c(1.0 - beta1)));
            Value v = add(mul(state[2], c(beta2)),
                          mul(mul(grad, grad), c(1.0 - beta2)));
            Value denominator = add(
                math::SqrtOp::create(b, nloc, div(v, correction(beta2))),
                c(epsilon));
            Value delta = div(div(m, correction(beta1)), denominator);
            if (rule == UpdateRule::AdamW && weightDecay != 0.0)
              delta = add(delta, mul(param, c(weightDecay)));
            updated = {sub(param, mul(delta, c(learningRate))), m, v};
            break;
          }
          }
          if (accumulated)
            updated.push_back(c(0.0));
          for (Value &value : updated)
            if (element != f32)
              value = arith::TruncFOp::create(b, nloc, element, value);
          if (accumulated) {
            // Between updates: the parameter and state as they were, the
            // sum kept (rounded like any stored value).
            Value sum =
                element != f32
                    ? arith::TruncFOp::create(b, nloc, element, accumulated)
                          .getResult()
                    : accumulated;
            for (size_t i = 0; i + 1 < updated.size(); ++i)
              updated[i] = arith::SelectOp::create(b, nloc, completesStep,
                                                   updated[i], inits[i]);
            updated.back() = arith::SelectOp::create(b, nloc, completesStep,
                                                     updated.back(), sum);
          }
          linalg::YieldOp::create(b, nloc, updated);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// vram.increment -> a 0-d linalg.generic adding one into its init.
struct IncrementLowering : OpConversionPattern<IncrementOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(IncrementOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{op.getResult().getType()}, ValueRange(),
        ValueRange{adaptor.getInit()},
        SmallVector<AffineMap>{AffineMap::get(rewriter.getContext())},
        SmallVector<utils::IteratorType>(),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value one = arith::ConstantOp::create(b, nloc, b.getF32FloatAttr(1));
          linalg::YieldOp::create(
              b, nloc, ValueRange{arith::AddFOp::create(b, nloc, args[0], one)});
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void vram::populateTrainingOpsToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<GreaterLowering, ScatterElementsLowering, UpdateLowering,
               IncrementLowering>(typeConverter, patterns.getContext());
}
