//===- VramDialect.h - the vram dialect and its host tensor type -*- C++ -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMDIALECT_H
#define VRAM_DIALECT_VRAM_VRAMDIALECT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"

#include "vram/Dialect/Vram/VramDialect.h.inc"

#include "vram/Dialect/Vram/VramEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "vram/Dialect/Vram/VramAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "vram/Dialect/Vram/VramTypes.h.inc"

#endif // VRAM_DIALECT_VRAM_VRAMDIALECT_H
