//===- Elementwise.cpp - onnx elementwise math to linalg.generic ----------===//
//
// Every op here becomes one parallel linalg.generic over the result shape;
// broadcast operands are read through indexing maps (nothing materialised)
// and the body computes one element with arith/math ops chosen by the ONNX
// element types (float, signed or unsigned integer, bool).
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "vram/Conversion/ONNXToLinalg/ONNXToLinalg.h"
#include "vram/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace vram;
using namespace vram::onnx_to_linalg;

namespace {

/// What an element computation needs besides its operands: the ONNX element
/// types (they carry signedness; NoneType for absent optional operands).
struct ElementTypes {
  SmallVector<Type> operands;
  Type result;
};

Value constant(OpBuilder &b, Location loc, Type type, double value) {
  return createScalarConstant(b, loc, type, value);
}

/// max(0, min(1, alpha * x + beta)), shared by HardSigmoid and HardSwish.
Value hardSigmoid(OpBuilder &b, Location loc, Value x, double alpha,
                  double beta) {
  Type type = x.getType();
  Value linear = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, constant(b, loc, type, alpha), x),
      constant(b, loc, type, beta));
  Value upper =
      arith::MinimumFOp::create(b, loc, linear, constant(b, loc, type, 1.0));
  return arith::MaximumFOp::create(b, loc, upper, constant(b, loc, type, 0.0));
}

Value maxOf(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  if (isa<FloatType>(x.getType()))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (isUnsigned)
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

Value minOf(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  if (isa<FloatType>(x.getType()))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (isUnsigned)
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

//===----------------------------------------------------------------------===//
// One element of each op. `args` has one value per op operand, null where an
// optional operand is absent.
//===----------------------------------------------------------------------===//

template <typename FloatOp, typename IntOp>
Value binary(OpBuilder &b, Location loc, ArrayRef<Value> args) {
  if (isa<FloatType>(args[0].getType()))
    return FloatOp::create(b, loc, args[0], args[1]);
  return IntOp::create(b, loc, args[0], args[1]);
}

Value computeElement(ONNXAddOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return binary<arith::AddFOp, arith::AddIOp>(b, loc, args);
}

Value computeElement(ONNXSubOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return binary<arith::SubFOp, arith::SubIOp>(b, loc, args);
}

Value computeElement(ONNXMulOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return binary<arith::MulFOp, arith::MulIOp>(b, loc, args);
}

Value computeElement(ONNXDivOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  // arith.divsi truncates toward zero, as ONNX (and C) integer division.
  if (isUnsignedOrBool(types.result))
    return binary<arith::DivFOp, arith::DivUIOp>(b, loc, args);
  return binary<arith::DivFOp, arith::DivSIOp>(b, loc, args);
}

Value computeElement(ONNXPowOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  Type baseType = types.operands[0];
  Type exponentType = types.operands[1];
  Value base = args[0];
  Value exponent = args[1];
  if (isa<FloatType>(baseType)) {
    // An integer exponent keeps negative bases exact: (-2)^3 = -8, where
    // powf would go through log(-2).
    if (isa<IntegerType>(exponentType)) {
      if (isUnsignedOrBool(exponentType))
        exponent = convertScalar(b, loc, exponent, exponentType,
                                 b.getIntegerType(64, /*isSigned=*/false));
      return math::FPowIOp::create(b, loc, base, exponent);
    }
    return math::PowFOp::create(
        b, loc, base, convertScalar(b, loc, exponent, exponentType, baseType));
  }
  if (isa<IntegerType>(exponentType))
    return math::IPowIOp::create(
        b, loc, base, convertScalar(b, loc, exponent, exponentType, baseType));
  // Integer base, float exponent: computed in the exponent's type and
  // truncated back, as ONNX Runtime does.
  Value power = math::PowFOp::create(
      b, loc, convertScalar(b, loc, base, baseType, exponentType), exponent);
  return convertScalar(b, loc, power, exponentType, baseType);
}

Value computeElement(ONNXSqrtOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::SqrtOp::create(b, loc, args[0]);
}

Value computeElement(ONNXReciprocalOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return arith::DivFOp::create(b, loc, constant(b, loc, args[0].getType(), 1.0),
                               args[0]);
}

/// Floats compare ordered (NaN is never equal or greater), integers by the
/// signedness of the ONNX type.
Value compare(OpBuilder &b, Location loc, ArrayRef<Value> args,
              const ElementTypes &types, arith::CmpFPredicate floatPredicate,
              arith::CmpIPredicate signedPredicate,
              arith::CmpIPredicate unsignedPredicate) {
  if (isa<FloatType>(args[0].getType()))
    return arith::CmpFOp::create(b, loc, floatPredicate, args[0], args[1]);
  return arith::CmpIOp::create(
      b, loc,
      isUnsignedOrBool(types.operands[0]) ? unsignedPredicate : signedPredicate,
      args[0], args[1]);
}

Value computeElement(ONNXGreaterOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  return compare(b, loc, args, types, arith::CmpFPredicate::OGT,
                 arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt);
}

Value computeElement(ONNXLessOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  return compare(b, loc, args, types, arith::CmpFPredicate::OLT,
                 arith::CmpIPredicate::slt, arith::CmpIPredicate::ult);
}

Value computeElement(ONNXEqualOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  return compare(b, loc, args, types, arith::CmpFPredicate::OEQ,
                 arith::CmpIPredicate::eq, arith::CmpIPredicate::eq);
}

Value computeElement(ONNXNotOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return arith::XOrIOp::create(b, loc, args[0],
                               constant(b, loc, args[0].getType(), 1));
}

Value computeElement(ONNXCosOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::CosOp::create(b, loc, args[0]);
}

Value computeElement(ONNXSinOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::SinOp::create(b, loc, args[0]);
}

Value computeElement(ONNXAbsOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  Type type = args[0].getType();
  if (isa<FloatType>(type))
    return math::AbsFOp::create(b, loc, args[0]);
  if (type.isUnsignedInteger())
    return args[0];
  return math::AbsIOp::create(b, loc, args[0]);
}

Value computeElement(ONNXNegOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  if (isa<FloatType>(args[0].getType()))
    return arith::NegFOp::create(b, loc, args[0]);
  return arith::SubIOp::create(b, loc, constant(b, loc, args[0].getType(), 0),
                               args[0]);
}

Value computeElement(ONNXExpOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::ExpOp::create(b, loc, args[0]);
}

Value computeElement(ONNXLogOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::LogOp::create(b, loc, args[0]);
}

Value computeElement(ONNXTanhOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::TanhOp::create(b, loc, args[0]);
}

Value computeElement(ONNXErfOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return math::ErfOp::create(b, loc, args[0]);
}

Value computeElement(ONNXReluOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  // Relu is defined for signed types only (float, int8..int64).
  return maxOf(b, loc, args[0], constant(b, loc, args[0].getType(), 0.0),
               /*isUnsigned=*/false);
}

Value computeElement(ONNXLeakyReluOp op, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  Value x = args[0];
  Type type = x.getType();
  Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                         constant(b, loc, type, 0.0));
  Value scaled = arith::MulFOp::create(
      b, loc, constant(b, loc, type, op.getAlpha().convertToDouble()), x);
  return arith::SelectOp::create(b, loc, negative, scaled, x);
}

Value computeElement(ONNXSigmoidOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  Value x = args[0];
  Type type = x.getType();
  Value one = constant(b, loc, type, 1.0);
  Value expNeg = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, expNeg));
}

Value computeElement(ONNXSwishOp op, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  // x * sigmoid(alpha x)
  Value x = args[0];
  Value scaled = arith::MulFOp::create(
      b, loc, constant(b, loc, x.getType(), op.getAlpha().convertToDouble()),
      x);
  Value sigmoid = computeElement(ONNXSigmoidOp(), b, loc, {scaled}, types);
  return arith::MulFOp::create(b, loc, x, sigmoid);
}

Value computeElement(ONNXGeluOp op, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  Value x = args[0];
  Type type = x.getType();
  Value inner;
  if (op.getApproximate() == "tanh") {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
    Value cube =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value sum = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, constant(b, loc, type, 0.044715), cube));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc,
            constant(b, loc, type,
                     llvm::numbers::sqrt2 * llvm::numbers::inv_sqrtpi),
            sum));
  } else {
    // erf(x / sqrt(2))
    inner = math::ErfOp::create(
        b, loc,
        arith::MulFOp::create(
            b, loc, x, constant(b, loc, type, llvm::numbers::inv_sqrt2)));
  }
  // 0.5 x (1 + inner)
  Value halfX = arith::MulFOp::create(b, loc, constant(b, loc, type, 0.5), x);
  return arith::MulFOp::create(
      b, loc, halfX,
      arith::AddFOp::create(b, loc, constant(b, loc, type, 1.0), inner));
}

Value computeElement(ONNXHardSigmoidOp op, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return hardSigmoid(b, loc, args[0], op.getAlpha().convertToDouble(),
                     op.getBeta().convertToDouble());
}

Value computeElement(ONNXHardSwishOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return arith::MulFOp::create(b, loc, args[0],
                               hardSigmoid(b, loc, args[0], 1.0 / 6.0, 0.5));
}

Value computeElement(ONNXClipOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  // min(max(x, lo), hi): when lo > hi every element becomes hi, as ONNX
  // specifies.
  bool isUnsigned = isUnsignedOrBool(types.result);
  Value result = args[0];
  if (args[1])
    result = maxOf(b, loc, result, args[1], isUnsigned);
  if (args[2])
    result = minOf(b, loc, result, args[2], isUnsigned);
  return result;
}

Value computeElement(ONNXWhereOp, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

Value computeElement(ONNXCastOp op, OpBuilder &b, Location loc,
                     ArrayRef<Value> args, const ElementTypes &types) {
  // round_mode is float8e8m0's; the other narrow floats round to nearest.
  NarrowFloatRounding rounding;
  rounding.saturate = op.getSaturate() != 0;
  if (isa<Float8E8M0FNUType>(types.result))
    rounding.mode = op.getRoundMode();
  return convertScalar(b, loc, args[0], types.operands[0], types.result,
                       rounding);
}

//===----------------------------------------------------------------------===//
// Element types each op accepts (ONNX's type constraints); checked before any
// IR is built so a wrong type is an error, not an invalid arith op.
//===----------------------------------------------------------------------===//

bool isNumeric(Type type) { return type.isIntOrFloat() && !type.isInteger(1); }

template <typename OpTy>
LogicalResult checkElementTypes(OpTy op, const ElementTypes &types) {
  Type x = types.operands[0];
  constexpr bool floatOnly =
      llvm::is_one_of<OpTy, ONNXSqrtOp, ONNXReciprocalOp, ONNXExpOp, ONNXLogOp,
                      ONNXCosOp, ONNXSinOp, ONNXTanhOp, ONNXErfOp,
                      ONNXLeakyReluOp, ONNXSigmoidOp, ONNXGeluOp, ONNXSwishOp,
                      ONNXHardSigmoidOp, ONNXHardSwishOp>::value;
  if constexpr (floatOnly) {
    if (!isa<FloatType>(x))
      return emitLoweringError(op)
             << "expects floating-point elements, got " << x;
  } else if constexpr (std::is_same_v<OpTy, ONNXWhereOp>) {
    if (!x.isInteger(1))
      return emitLoweringError(op) << "expects a bool condition";
  } else if constexpr (std::is_same_v<OpTy, ONNXNotOp>) {
    if (!x.isInteger(1))
      return emitLoweringError(op) << "expects bool elements, got " << x;
  } else if constexpr (llvm::is_one_of<OpTy, ONNXGreaterOp, ONNXLessOp,
                                       ONNXEqualOp>::value) {
    if (x != types.operands[1])
      return emitLoweringError(op) << "A and B have different element types";
    bool acceptsBool = std::is_same_v<OpTy, ONNXEqualOp>;
    if (!x.isIntOrFloat() || (x.isInteger(1) && !acceptsBool))
      return emitLoweringError(op) << "cannot compare " << x << " elements";
  } else if constexpr (std::is_same_v<OpTy, ONNXCastOp>) {
    if (!x.isIntOrFloat() || !types.result.isIntOrFloat())
      return emitLoweringError(op)
             << "casts only between numeric and bool types, not " << x << " to "
             << types.result;
  } else {
    if (!isNumeric(x))
      return emitLoweringError(op) << "expects numeric elements, got " << x;
    if constexpr (llvm::is_one_of<OpTy, ONNXNegOp, ONNXReluOp>::value)
      if (isUnsignedOrBool(x))
        return emitLoweringError(op) << "expects signed elements, got " << x;
  }
  return success();
}

template <typename OpTy>
class ElementwiseLowering : public ONNXToLinalgPattern<OpTy> {
public:
  using ONNXToLinalgPattern<OpTy>::ONNXToLinalgPattern;
  using OpAdaptor = typename ONNXToLinalgPattern<OpTy>::OpAdaptor;

protected:
  LogicalResult lower(OpTy op, OpAdaptor adaptor,
                      ConversionPatternRewriter &rewriter) const override {
    ElementTypes types;
    types.result = getElementTypeOrSelf(op->getResult(0).getType());
    SmallVector<Value> inputs;
    for (auto [original, converted] :
         llvm::zip(op->getOperands(), adaptor.getOperands())) {
      types.operands.push_back(getElementTypeOrSelf(original.getType()));
      if (!isa<NoneType>(original.getType()))
        inputs.push_back(converted);
    }
    if (failed(checkElementTypes(op, types)))
      return failure();

    auto resultType = this->convertTensorType(op->getResult(0).getType());
    Value result = buildElementwiseGeneric(
        rewriter, op.getLoc(), resultType, inputs,
        [&](OpBuilder &b, Location loc, ValueRange present) {
          // Put the scalars back at their operand positions.
          SmallVector<Value> args;
          auto next = present.begin();
          for (Type type : types.operands)
            args.push_back(isa<NoneType>(type) ? Value() : *next++);
          return computeElement(op, b, loc, args, types);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void vram::populateElementwiseToLinalgPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns) {
  patterns.add<
      ElementwiseLowering<ONNXAddOp>, ElementwiseLowering<ONNXSubOp>,
      ElementwiseLowering<ONNXMulOp>, ElementwiseLowering<ONNXDivOp>,
      ElementwiseLowering<ONNXPowOp>, ElementwiseLowering<ONNXSqrtOp>,
      ElementwiseLowering<ONNXReciprocalOp>, ElementwiseLowering<ONNXGreaterOp>,
      ElementwiseLowering<ONNXLessOp>, ElementwiseLowering<ONNXEqualOp>,
      ElementwiseLowering<ONNXNotOp>, ElementwiseLowering<ONNXNegOp>,
      ElementwiseLowering<ONNXExpOp>, ElementwiseLowering<ONNXLogOp>,
      ElementwiseLowering<ONNXCosOp>, ElementwiseLowering<ONNXSinOp>,
      ElementwiseLowering<ONNXAbsOp>, ElementwiseLowering<ONNXReluOp>,
      ElementwiseLowering<ONNXLeakyReluOp>, ElementwiseLowering<ONNXSigmoidOp>,
      ElementwiseLowering<ONNXTanhOp>, ElementwiseLowering<ONNXErfOp>,
      ElementwiseLowering<ONNXGeluOp>, ElementwiseLowering<ONNXSwishOp>,
      ElementwiseLowering<ONNXHardSigmoidOp>,
      ElementwiseLowering<ONNXHardSwishOp>, ElementwiseLowering<ONNXClipOp>,
      ElementwiseLowering<ONNXWhereOp>, ElementwiseLowering<ONNXCastOp>>(
      typeConverter, patterns.getContext());
}
