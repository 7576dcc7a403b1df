//===- VramDialect.h - the vram dialect and its host tensor type -*- C++ -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMDIALECT_H
#define VRAM_DIALECT_VRAM_VRAMDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "vram/Dialect/Vram/VramDialect.h.inc"

#include "vram/Dialect/Vram/VramEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "vram/Dialect/Vram/VramAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "vram/Dialect/Vram/VramTypes.h.inc"

#include <optional>

namespace vram {

/// The `vram.param` of a function's argument; std::nullopt for data inputs.
std::optional<ParamKind> getParamKind(mlir::FunctionOpInterface func,
                                      unsigned argument);
void setParamKind(mlir::FunctionOpInterface func, unsigned argument,
                  ParamKind kind);

/// The `vram.phase` of an op; std::nullopt for forward ops.
std::optional<Phase> getPhase(mlir::Operation *op);
void setPhase(mlir::Operation *op, Phase phase);

/// The `vram.category` an op sets for its results, if any.
std::optional<MemoryCategory> getCategory(mlir::Operation *op);
void setCategory(mlir::Operation *op, MemoryCategory category);

} // namespace vram

#endif // VRAM_DIALECT_VRAM_VRAMDIALECT_H
