//===- Training.cpp - the optimizer step to linalg
//-------------------------===//
//
// The optimizer step vram-train adds: vram.update and vram.increment, in
// place on the parameters and their state; and vram.tensor_parallel_copy,
// which a tensor-parallel step's forward pass reads its input through.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// vram.update -> one linalg.generic whose outs are the parameter and its
/// state: bufferization writes them where they live. The step count and the
/// clipping factor are 0-d inputs broadcast to every element (no host code
/// reads them: on GPU they live in device memory); the bias corrections
/// are loop-invariant, which LLVM hoists. The arithmetic is in f32 for half
/// tensors, rounded once; with master weights it reads and writes the f32
/// master copy, and the half parameter is the new copy rounded. Accumulating, every element also computes the
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
    bool master = op.getMaster();

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
          // The rule's operands: the parameter (its master copy) and state.
          SmallVector<Value> state;
          for (Value arg : inits.drop_front(master ? 1 : 0))
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
          if (master)
            updated.insert(updated.begin(), updated.front());
          if (accumulated)
            updated.push_back(c(0.0));
          for (auto [value, init] : llvm::zip(updated, inits))
            if (init.getType() != f32)
              value = arith::TruncFOp::create(b, nloc, init.getType(), value);
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

/// vram.tensor_parallel_copy -> its input: what makes it more than the
/// input is its gradient, already built.
struct TensorParallelCopyLowering : OpConversionPattern<TensorParallelCopyOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TensorParallelCopyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

} // namespace

void vram::populateTrainingOpsToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<UpdateLowering, IncrementLowering, TensorParallelCopyLowering>(
      typeConverter, patterns.getContext());
}
