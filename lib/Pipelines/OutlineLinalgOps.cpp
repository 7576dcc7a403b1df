//===- OutlineLinalgOps.cpp - vram-outline-linalg-ops ---------------------===//
//
// One function per loop nest, so that LLVM's per-function loop passes stay
// linear in the program's size (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#define DEBUG_TYPE "vram-outline-linalg-ops"

namespace vram {
#define GEN_PASS_DEF_OUTLINELINALGOPSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct OutlineLinalgOpsPass
    : public vram::impl::OutlineLinalgOpsPassBase<OutlineLinalgOpsPass> {
  void runOnOperation() override;
};

/// Replaces `op` by a call of a new private, non-inlined function holding
/// it, inserted into `symbols` after `previous`, which becomes the new
/// function.
void outline(linalg::LinalgOp op, func::FuncOp parent, unsigned index,
             SymbolTable &symbols, Operation *&previous) {
  SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  SmallVector<Value> arguments;
  SmallVector<Operation *> constants;
  for (Value value : used) {
    Operation *producer = value.getDefiningOp();
    if (producer && producer->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(producer);
    else
      arguments.push_back(value);
  }

  OpBuilder builder(parent.getContext());
  auto callee = func::FuncOp::create(
      op.getLoc(),
      (parent.getName() + "_" + op->getName().stripDialect() + "_" +
       Twine(index))
          .str(),
      builder.getFunctionType(ValueRange(arguments).getTypes(), {}));
  callee.setPrivate();
  callee.setNoInline(true);
  // convert-func-to-llvm drops no_inline but keeps LLVM's own attributes.
  callee->setAttr("passthrough",
                  builder.getArrayAttr(builder.getStringAttr("noinline")));
  symbols.insert(callee, std::next(Block::iterator(previous)));
  previous = callee;

  IRMapping mapping;
  Block *body = callee.addEntryBlock();
  mapping.map(arguments, body->getArguments());
  builder.setInsertionPointToStart(body);
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  builder.clone(*op, mapping);
  func::ReturnOp::create(builder, op.getLoc());

  builder.setInsertionPoint(op);
  func::CallOp::create(builder, op.getLoc(), callee, arguments);
  op->erase();
}

void OutlineLinalgOpsPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  for (auto parent : llvm::to_vector(module.getOps<func::FuncOp>())) {
    SmallVector<linalg::LinalgOp> ops;
    parent.walk<WalkOrder::PreOrder>([&](linalg::LinalgOp op) {
      if (op->getNumResults() == 0)
        ops.push_back(op);
      return WalkResult::skip();
    });
    Operation *previous = parent;
    for (auto [index, op] : llvm::enumerate(ops))
      outline(op, parent, index, symbols, previous);
  }
}
} // namespace
