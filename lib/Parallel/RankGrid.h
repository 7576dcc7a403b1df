//===- RankGrid.h - the device grid of a per-rank program -------*- C++ -*-===//
//
// Private to lib/Parallel: the passes that make a per-rank program share one
// grid, @ranks (VramDialect::kRankGridName), each setting its own axis.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_LIB_PARALLEL_RANKGRID_H
#define VRAM_LIB_PARALLEL_RANKGRID_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>

namespace vram {

/// Gives axis `axis` of the module's grid @ranks `ranks` ranks, making the
/// grid (private, every other axis 1) if the module has none.
void setRankGridAxis(mlir::ModuleOp module, int16_t axis, int64_t ranks);

/// The grid @ranks and one of its axes, as a collective over that axis
/// names them.
struct RankGridAxis {
  mlir::FlatSymbolRefAttr grid;
  mlir::DenseI16ArrayAttr axes;

  RankGridAxis(mlir::MLIRContext *context, int16_t axis);
};

/// An ONNX op with one operand and one result of its shape (an activation,
/// a cast): it works on each element alone.
bool isUnaryElementwise(mlir::Operation *op);

} // namespace vram

#endif // VRAM_LIB_PARALLEL_RANKGRID_H
