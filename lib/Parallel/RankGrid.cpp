//===- RankGrid.cpp - the device grid of a per-rank program ---------------===//

#include "RankGrid.h"

#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramDialect.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

void vram::setRankGridAxis(ModuleOp module, int16_t axis, int64_t ranks) {
  auto grid = dyn_cast_if_present<shard::GridOp>(
      SymbolTable::lookupSymbolIn(module, VramDialect::kRankGridName));
  SmallVector<int64_t> shape;
  if (grid)
    shape.assign(grid.getShape().begin(), grid.getShape().end());
  shape.resize(std::max<size_t>(shape.size(), axis + 1), 1);
  shape[axis] = ranks;
  if (grid) {
    grid.setShape(shape);
    return;
  }
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  grid = shard::GridOp::create(
      builder, module.getLoc(),
      StringAttr::get(module.getContext(), VramDialect::kRankGridName),
      builder.getDenseI64ArrayAttr(shape));
  // Private: once lowering has turned the collectives into runtime calls,
  // nothing refers to it and symbol-dce drops it.
  SymbolTable::setSymbolVisibility(grid, SymbolTable::Visibility::Private);
}

vram::RankGridAxis::RankGridAxis(MLIRContext *context, int16_t axis)
    : grid(FlatSymbolRefAttr::get(context, VramDialect::kRankGridName)),
      axes(DenseI16ArrayAttr::get(context, {axis})) {}

bool vram::isUnaryElementwise(Operation *op) {
  return isa<ONNXDialect>(op->getDialect()) && op->getNumOperands() == 1 &&
         op->getNumResults() == 1 &&
         op->hasTrait<OpTrait::SameOperandsAndResultShape>();
}
