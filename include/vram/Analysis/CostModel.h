//===- CostModel.h - compute, traffic and workspace cost of ops -*- C++ -*-===//
//
// The cost model behind recompute decisions and time estimates. Per-op
// formulas live in CostModel.cpp and are documented in docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_ANALYSIS_COSTMODEL_H
#define VRAM_ANALYSIS_COSTMODEL_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Operation.h"

#include <cstdint>

#include "vram/Analysis/CostModelInterface.h.inc"

namespace vram {

/// Flops charged per element for a transcendental function (exp, log, tanh,
/// erf, ...). GPUs evaluate these with a special-function-unit approximation
/// plus a few FMAs of range reduction and correction; ~10 FP32 operations is
/// the usual order of magnitude, and one constant keeps frontends consistent
/// (onnx.Exp and a linalg.generic around math.exp cost the same).
inline constexpr double kTranscendentalFlops = 10.0;

/// Flops charged per element for sqrt / reciprocal sqrt (a special-function
/// approximation plus a Newton step).
inline constexpr double kSqrtFlops = 4.0;

struct OpCost {
  /// Arithmetic operations, a multiply-add counting as 2.
  double flops = 0;
  /// Bytes read + bytes written in device memory.
  double bytesAccessed = 0;
  /// Scratch memory the kernel needs beyond its operands and results.
  uint64_t workspaceBytes = 0;
  /// False when an operand or result has a dynamic shape: dynamic dimensions
  /// were counted as 1, so the numbers above are lower bounds.
  bool complete = true;
};

/// Cost of executing `op` once. Uses CostModelOpInterface when the op
/// implements it; otherwise the default:
///   flops = number of elements of all shaped results,
///   bytes = byte sizes of all shaped operands and results,
///   workspace = 0,
/// and terminators (func.return, linalg.yield, ...) cost nothing, since they
/// only forward values.
OpCost estimateOpCost(mlir::Operation *op);

/// True when `op` has a real cost model rather than the default.
bool hasCostModel(mlir::Operation *op);

/// Attaches CostModelOpInterface as external models to every op of the onnx
/// dialect (except onnx.Node, whose meaning is unknown and which therefore
/// gets the default) and to every linalg structured op.
void registerCostModelExternalModels(mlir::DialectRegistry &registry);

} // namespace vram

#endif // VRAM_ANALYSIS_COSTMODEL_H
