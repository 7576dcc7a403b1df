//===- GradientRules.h - what the gradient rule files share -----*- C++ -*-===//
//
// Private to lib/Training. The reverse-mode rules of the onnx ops are
// overloads, one per op, of
//   saveFor(OpT, OpBuilder &, ArrayRef<bool> wanted)
//       what the forward pass keeps for the rule (default: nothing);
//   gradientOf(OpT, IRBuilding &, ValueRange saved, ValueRange dY,
//              ArrayRef<bool> wanted)
//       the operands' gradients, from onnx ops;
// defined as static functions of namespace vram in ViewGradients.cpp,
// ElementwiseGradients.cpp and LayerGradients.cpp, where GradientModel finds
// them by argument-dependent lookup when each file attaches its ops.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_TRAINING_GRADIENTRULES_H
#define VRAM_LIB_TRAINING_GRADIENTRULES_H

#include "vram/Training/GradientOpInterface.h"
#include "vram/Training/IRBuilding.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

namespace vram {

/// The default rule: nothing to save.
template <typename OpT>
mlir::FailureOr<llvm::SmallVector<mlir::Value>> saveFor(OpT, mlir::OpBuilder &,
                                                        llvm::ArrayRef<bool>) {
  return llvm::SmallVector<mlir::Value>{};
}

namespace gradient_rules {
using namespace mlir;

using Gradients = FailureOr<SmallVector<Value>>;

inline SmallVector<int64_t> shapeOf(Value value) {
  return llvm::to_vector(cast<RankedTensorType>(value.getType()).getShape());
}

inline int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

/// The value of a constant scalar float operand, if it is one.
inline std::optional<double> getConstantFloat(Value value) {
  DenseFPElementsAttr attr;
  if (!value || isa<NoneType>(value.getType()) ||
      !matchPattern(value, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

inline SmallVector<int64_t> intsOr(std::optional<ArrayAttr> attr, size_t size,
                                   int64_t fill) {
  if (!attr)
    return SmallVector<int64_t>(size, fill);
  return llvm::to_vector(llvm::map_range(
      *attr, [](Attribute a) { return cast<IntegerAttr>(a).getInt(); }));
}

inline Type elementTypeOf(Value value) {
  return getElementTypeOrSelf(value.getType());
}

/// What a bilinear op (Mul, MatMul, Gemm, Conv: Y = f(A, B)) keeps: the
/// gradient of A reads B and that of B reads A, so only the operands a
/// wanted gradient reads are saved (a frozen weight's input is not kept).
inline SmallVector<Value> saveForBilinear(Value a, Value b,
                                          ArrayRef<bool> wanted) {
  SmallVector<Value> saved;
  if (wanted[0])
    saved.push_back(b);
  if (wanted[1])
    saved.push_back(a);
  return saved;
}

/// GradientOpInterface on OpT, answered by its saveFor and gradientOf.
template <typename OpT>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpT>, OpT> {
  FailureOr<SmallVector<Value>> saveForBackward(Operation *op,
                                                OpBuilder &builder,
                                                ArrayRef<bool> wanted) const {
    return saveFor(cast<OpT>(op), builder, wanted);
  }
  FailureOr<SmallVector<Value>> buildGradient(Operation *op, OpBuilder &builder,
                                              ValueRange saved,
                                              ValueRange resultGradients,
                                              ArrayRef<bool> wanted) const {
    IRBuilding ir(builder, op->getLoc());
    return gradientOf(cast<OpT>(op), ir, saved, resultGradients, wanted);
  }
};

template <typename... OpTs> void attachGradientModels(MLIRContext *context) {
  (OpTs::template attachInterface<GradientModel<OpTs>>(*context), ...);
}

/// Each file's ops (registerGradientExternalModels attaches them all; the
/// collectives' when their dialects load).
void attachViewGradients(MLIRContext *context);
void attachElementwiseGradients(MLIRContext *context);
void attachLayerGradients(MLIRContext *context);
void attachCollectiveGradients(DialectRegistry &registry);

} // namespace gradient_rules
} // namespace vram

#endif // VRAM_LIB_TRAINING_GRADIENTRULES_H
