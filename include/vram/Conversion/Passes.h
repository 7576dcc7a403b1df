//===- Passes.h - vram-opt's conversion passes ------------------*- C++ -*-===//

#ifndef VRAM_CONVERSION_PASSES_H
#define VRAM_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace vram {

#define GEN_PASS_DECL
#include "vram/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "vram/Conversion/Passes.h.inc"

} // namespace vram

#endif // VRAM_CONVERSION_PASSES_H
