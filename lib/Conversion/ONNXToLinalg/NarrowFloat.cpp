//===- NarrowFloat.cpp - conversions of 8- and 4-bit floats ---------------===//
//
// LLVM has no arithmetic on float8 or float4: values of those types are
// their bits (the LLVM lowering stores them as i8 / i4), so conversions are
// built here from integer and f32 ops. Decoding reads a table of every
// code's value; encoding finds the nearest representable magnitude by a
// binary search over the sorted table of finite ones, then applies ONNX's
// rules for NaN, infinity, overflow and the sign. Both tables come from
// APFloat, which knows each format's semantics.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace vram {
namespace onnx_to_linalg {

bool isNarrowFloat(Type type) {
  auto floatType = dyn_cast<FloatType>(getElementTypeOrSelf(type));
  return floatType && floatType.getWidth() < 16;
}

namespace {

/// What the encoder needs to know of a format: its finite non-negative
/// magnitudes in code order (increasing), and the codes of the specials.
struct NarrowFormat {
  unsigned bits;
  /// Values of codes 0, 1, ... up to the largest finite one.
  SmallVector<double> magnitudes;
  /// 0 for unsigned formats (float8e8m0).
  uint64_t signBit;
  bool hasNegativeZero;
  std::optional<uint64_t> infinityCode;
  /// The code NaN becomes, by the sign of the NaN (formats without NaN:
  /// what ONNX's reference gives, negative zero).
  uint64_t nanCode[2];
};

NarrowFormat describe(FloatType type) {
  const llvm::fltSemantics &semantics = type.getFloatSemantics();
  NarrowFormat format;
  format.bits = type.getWidth();
  bool isSigned = llvm::APFloat::semanticsHasSignedRepr(semantics);
  format.signBit = isSigned ? uint64_t(1) << (format.bits - 1) : 0;
  uint64_t codes = isSigned ? format.signBit : uint64_t(1) << format.bits;
  for (uint64_t code = 0; code < codes; ++code) {
    llvm::APFloat value(semantics, llvm::APInt(format.bits, code));
    if (!value.isFinite())
      break;
    format.magnitudes.push_back(value.convertToDouble());
  }
  format.hasNegativeZero =
      isSigned &&
      llvm::APFloat::getZero(semantics, /*Negative=*/true).isNegative();
  if (llvm::APFloat::semanticsHasInf(semantics))
    format.infinityCode =
        llvm::APFloat::getInf(semantics).bitcastToAPInt().getZExtValue();
  for (bool negative : {false, true})
    format.nanCode[negative] = llvm::APFloat::semanticsHasNaN(semantics)
                                   ? llvm::APFloat::getNaN(semantics, negative)
                                         .bitcastToAPInt()
                                         .getZExtValue()
                                   : format.signBit;
  return format;
}

Value constantF32Table(OpBuilder &b, Location loc, ArrayRef<float> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getF32Type());
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(type, values));
}

Value tableAt(OpBuilder &b, Location loc, Value table, Value index) {
  return tensor::ExtractOp::create(b, loc, table, ValueRange{index});
}

} // namespace

Value decodeNarrowFloat(OpBuilder &b, Location loc, Value value) {
  auto type = cast<FloatType>(value.getType());
  const llvm::fltSemantics &semantics = type.getFloatSemantics();
  unsigned bits = type.getWidth();
  SmallVector<float> values;
  for (uint64_t code = 0; code < (uint64_t(1) << bits); ++code)
    values.push_back(static_cast<float>(
        llvm::APFloat(semantics, llvm::APInt(bits, code)).convertToDouble()));
  Value table = constantF32Table(b, loc, values);
  Value code = arith::BitcastOp::create(b, loc, b.getIntegerType(bits), value);
  Value index = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), code);
  return tableAt(b, loc, table, index);
}

Value encodeNarrowFloat(OpBuilder &b, Location loc, Value value,
                        FloatType target, const NarrowFloatRounding &rounding) {
  NarrowFormat format = describe(target);
  Type i32 = b.getI32Type();
  auto i32Constant = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  auto f32Constant = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  };

  // Magnitudes, then one past the largest (the step above it: values that
  // round there overflow), then NaN padding to a power of two, which no
  // comparison accepts.
  int64_t count = format.magnitudes.size();
  SmallVector<float> table(format.magnitudes.begin(), format.magnitudes.end());
  // The step above the largest: the top binade's spacing, or for a format
  // of powers of two alone (float8e8m0, without zero) the next power.
  bool powersOfTwo =
      !llvm::APFloat::semanticsHasZero(target.getFloatSemantics());
  table.push_back(powersOfTwo ? 2 * table[count - 1]
                              : 2 * table[count - 1] - table[count - 2]);
  int64_t size = llvm::PowerOf2Ceil(count + 2);
  table.resize(size, std::nanf(""));
  Value magnitudes = constantF32Table(b, loc, table);

  Value magnitude = math::AbsFOp::create(b, loc, value);
  // The largest code whose magnitude is at most |x| (0 below the smallest).
  Value code = i32Constant(0);
  for (int64_t step = size / 2; step >= 1; step /= 2) {
    Value candidate = arith::AddIOp::create(b, loc, code, i32Constant(step));
    Value candidateValue = tableAt(
        b, loc, magnitudes,
        arith::IndexCastOp::create(b, loc, b.getIndexType(), candidate));
    Value fits = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                       candidateValue, magnitude);
    code = arith::SelectOp::create(b, loc, fits, candidate, code);
  }
  auto indexOf = [&](Value i) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
  };
  Value low = tableAt(b, loc, magnitudes, indexOf(code));
  Value high =
      tableAt(b, loc, magnitudes,
              indexOf(arith::AddIOp::create(b, loc, code, i32Constant(1))));
  Value roundUp;
  if (rounding.mode == "up") {
    roundUp = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                    magnitude, low);
  } else if (rounding.mode == "down") {
    roundUp = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  } else {
    // Nearest, ties to the even code.
    Value below = arith::SubFOp::create(b, loc, magnitude, low);
    Value above = arith::SubFOp::create(b, loc, high, magnitude);
    Value closer =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, above, below);
    Value tie =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, above, below);
    Value odd = arith::TruncIOp::create(b, loc, b.getI1Type(), code);
    roundUp = arith::OrIOp::create(b, loc, closer,
                                   arith::AndIOp::create(b, loc, tie, odd));
  }
  code = arith::AddIOp::create(b, loc, code,
                               arith::ExtUIOp::create(b, loc, i32, roundUp));

  // Overflow (and infinity): the largest finite value when saturating,
  // else infinity where the format has it, else NaN.
  Value negative = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::slt,
      arith::BitcastOp::create(b, loc, i32, value), i32Constant(0));
  Value overflows = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                          code, i32Constant(count));
  Value overflowCode =
      rounding.saturate ? i32Constant(count - 1)
      : format.infinityCode
          ? i32Constant(*format.infinityCode)
          : arith::SelectOp::create(b, loc, negative,
                                    i32Constant(format.nanCode[1]),
                                    i32Constant(format.nanCode[0]))
                .getResult();
  code = arith::SelectOp::create(b, loc, overflows, overflowCode, code);
  if (format.signBit) {
    // The sign bit, except on NaN codes chosen above and on zero where the
    // format has no negative zero (it would be NaN).
    Value signable = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           code, i32Constant(format.signBit));
    if (!format.hasNegativeZero)
      signable = arith::AndIOp::create(
          b, loc, signable,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, code,
                                i32Constant(0)));
    Value signed_ =
        arith::OrIOp::create(b, loc, code, i32Constant(format.signBit));
    code = arith::SelectOp::create(
        b, loc, arith::AndIOp::create(b, loc, negative, signable), signed_,
        code);
  } else {
    // Unsigned formats (float8e8m0): negative values are NaN.
    Value belowZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                            value, f32Constant(0));
    code = arith::SelectOp::create(b, loc, belowZero,
                                   i32Constant(format.nanCode[0]), code);
  }
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  Value nanCode =
      arith::SelectOp::create(b, loc, negative, i32Constant(format.nanCode[1]),
                              i32Constant(format.nanCode[0]));
  code = arith::SelectOp::create(b, loc, isNaN, nanCode, code);
  Value bitsValue =
      arith::TruncIOp::create(b, loc, b.getIntegerType(format.bits), code);
  return arith::BitcastOp::create(b, loc, target, bitsValue);
}

} // namespace onnx_to_linalg
} // namespace vram
