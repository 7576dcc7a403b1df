//===- ShapeInference.h - helpers of the ops' inference rules ---*- C++ -*-===//
//
// Private to lib/Dialect/ONNX: what the inferResultTypes methods of
// ShapeInference.cpp and ShapeOpsInference.cpp share.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_DIALECT_ONNX_SHAPEINFERENCE_H
#define VRAM_LIB_DIALECT_ONNX_SHAPEINFERENCE_H

#include "OpHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

namespace vram::detail {
using namespace mlir;

inline constexpr int64_t kDynamic = ShapedType::kDynamic;

inline Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

inline bool isNone(Value value) {
  return !value || isa<NoneType>(value.getType());
}

/// Pushes `type` for a result the node produces, `none` for one it omits.
inline void pushResult(SmallVectorImpl<Type> &types, Value result, Type type) {
  types.push_back(isNone(result) ? result.getType() : type);
}

inline RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// Product of the dims: kDynamic when one is dynamic; nullopt when the
/// static ones overflow int64 (a corrupt shape: no tensor has 2^63
/// elements).
inline std::optional<int64_t> product(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  bool dynamic = false;
  for (int64_t d : dims) {
    if (ShapedType::isDynamic(d))
      dynamic = true;
    else if (llvm::MulOverflow(result, d, result))
      return std::nullopt;
  }
  return dynamic ? kDynamic : result;
}

inline LogicalResult tooManyElements(Operation *op) {
  return op->emitOpError("result would have more than 2^63 elements");
}

/// Normalises a list of axes against `rank`; fails on an out-of-range or
/// repeated axis.
inline FailureOr<SmallVector<int64_t>>
normalizeAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    FailureOr<int64_t> normalized = normalizeAxis(op, axis, rank);
    if (failed(normalized))
      return failure();
    if (!seen.insert(*normalized).second)
      return op->emitOpError() << "axis " << axis << " is repeated";
    result.push_back(*normalized);
  }
  return result;
}

/// The most dimensions a result may have: a shape operand of run-time
/// values with more entries is a corrupt model, not a tensor.
inline constexpr int64_t kMaxRank = 64;

inline LogicalResult checkRank(Operation *op, int64_t rank) {
  if (rank > kMaxRank)
    return op->emitOpError()
           << "result would have " << rank << " dimensions; at most "
           << kMaxRank << " are supported";
  return success();
}

/// Unranked result of `elementType`: what an op gets when an operand's rank
/// is not known.
inline LogicalResult unranked(Type elementType, SmallVectorImpl<Type> &types) {
  types.push_back(UnrankedTensorType::get(elementType));
  return success();
}

} // namespace vram::detail

#endif // VRAM_LIB_DIALECT_ONNX_SHAPEINFERENCE_H
