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
#include "vram/Dialect/ONNX/ONNXDialect.h"

#define GET_OP_CLASSES
#include "vram/Dialect/ONNX/ONNXOps.h.inc"

#endif // VRAM_DIALECT_ONNX_ONNXOPS_H
