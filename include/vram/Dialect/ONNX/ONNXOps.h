//===- ONNXOps.h - ONNX operators as MLIR ops -------------------*- C++ -*-===//

#ifndef VRAM_DIALECT_ONNX_ONNXOPS_H
#define VRAM_DIALECT_ONNX_ONNXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Traits.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "vram/Dialect/ONNX/Einsum.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"

#include "vram/Dialect/ONNX/ONNXInterfaces.h.inc"

namespace vram {
/// Result type of shape-preserving ops: the type of `operand`.
mlir::LogicalResult
inferSameTypeAsOperand(mlir::Value operand,
                       llvm::SmallVectorImpl<mlir::Type> &resultTypes);
/// Result type of ops with multidirectional (numpy) broadcasting: the
/// broadcast shape of `operands`, with `elementType` (the first operand's
/// when null).
mlir::LogicalResult
inferBroadcastResult(mlir::Operation *op, mlir::ValueRange operands,
                     mlir::Type elementType,
                     llvm::SmallVectorImpl<mlir::Type> &resultTypes);
/// The element type ONNX's TensorProto.DataType `dataType` names, or null.
mlir::Type getElementTypeForONNXDataType(mlir::MLIRContext *context,
                                         int64_t dataType);
/// The inverse: the TensorProto.DataType code of `elementType` (Cast's `to`,
/// TypeProtos), or nullopt for a type ONNX has no code for here.
std::optional<int64_t> getONNXDataType(mlir::Type elementType);
/// The values of a constant integer tensor operand (shapes, axes, pads), or
/// nullopt when the operand is absent (`none`) or not a constant.
std::optional<llvm::SmallVector<int64_t>> getConstantInts(mlir::Value value);
/// A dense float attribute of `type` holding `values` (row-major), each
/// rounded to its float element type (constants computed in double:
/// interpolation weights, tap matrices).
mlir::DenseElementsAttr getFloatElements(mlir::RankedTensorType type,
                                         llvm::ArrayRef<double> values);
/// The inverse: the elements of a float attribute, as doubles.
llvm::SmallVector<double> getFloatValues(mlir::DenseFPElementsAttr attr);
} // namespace vram

#define GET_OP_CLASSES
#include "vram/Dialect/ONNX/ONNXOps.h.inc"

#endif // VRAM_DIALECT_ONNX_ONNXOPS_H
