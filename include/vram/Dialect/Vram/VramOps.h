//===- VramOps.h - the vram dialect's ops ----------------------*- C++ -*-===//

#ifndef VRAM_DIALECT_VRAM_VRAMOPS_H
#define VRAM_DIALECT_VRAM_VRAMOPS_H

#include "vram/Dialect/Vram/VramDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "vram/Dialect/Vram/VramOps.h.inc"

#endif // VRAM_DIALECT_VRAM_VRAMOPS_H
