//===- ONNXDialect.h - the ONNX frontend dialect ----------------*- C++ -*-===//

#ifndef VRAM_DIALECT_ONNX_ONNXDIALECT_H
#define VRAM_DIALECT_ONNX_ONNXDIALECT_H

#include "mlir/IR/Dialect.h"

#include "vram/Dialect/ONNX/ONNXDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "vram/Dialect/ONNX/ONNXTypes.h.inc"

#endif // VRAM_DIALECT_ONNX_ONNXDIALECT_H
