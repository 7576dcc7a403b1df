//===- GenericNodeTypes.h - result types of unmodelled ONNX operators -*- C++ -*-===//

#ifndef VRAM_LIB_IMPORT_GENERICNODETYPES_H
#define VRAM_LIB_IMPORT_GENERICNODETYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/IR/ValueRange.h"

#include <optional>

namespace vram {

/// Result types of an ONNX operator the dialect has no op for (it imports
/// as onnx.Node), for the common operators whose shape rule is simple:
/// elementwise ones, comparisons, variadic broadcasts, ConstantOfShape,
/// Range and 4-d Attention. nullopt when no rule applies (the importer then
/// asks the file's declarations and libonnx).
std::optional<llvm::SmallVector<mlir::Type>>
inferGenericNodeTypes(llvm::StringRef opType, bool isDefaultDomain,
                      mlir::ValueRange operands,
                      llvm::ArrayRef<mlir::NamedAttribute> attributes,
                      size_t numOutputs);

} // namespace vram

#endif // VRAM_LIB_IMPORT_GENERICNODETYPES_H
