//===- OutlineLinalgOps.cpp - vram-outline-linalg-ops ---------------------===//
//
// One function per loop nest, so that LLVM's per-function loop passes stay
// linear in the program's size (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

/// The type a function takes `type` as: a view at a static offset into a
/// buffer (a slice of a concatenation, the interior of a padded buffer)
/// at any offset, so that the ops on each slice share one function.
static Type getParameterType(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  auto strided =
      memref ? dyn_cast<StridedLayoutAttr>(memref.getLayout()) : nullptr;
  if (!strided || ShapedType::isDynamic(strided.getOffset()))
    return type;
  return MemRefType::get(memref.getShape(), memref.getElementType(),
                         StridedLayoutAttr::get(type.getContext(),
                                                ShapedType::kDynamic,
                                                strided.getStrides()),
                         memref.getMemorySpace());
}

/// Outlines linalg ops into functions, one per distinct loop nest: an op
/// whose function would be identical to one made before (the repeated
/// layers of a network, up to the buffers passed) calls that one, so LLVM
/// compiles each kind of loop nest once.
class Outliner {
public:
  Outliner(ModuleOp module) : symbols(module) {}

  /// Replaces `op` by a call of a private, non-inlined function holding it,
  /// named after `parent` and `index` when it is new.
  void outline(linalg::LinalgOp op, func::FuncOp parent, unsigned index);

  /// New functions go after `function`.
  void insertAfter(Operation *function) { previous = function; }

private:
  SymbolTable symbols;
  Operation *previous = nullptr;
  /// Each function made, by its text without its name.
  llvm::StringMap<func::FuncOp> functionsByBody;
};

void Outliner::outline(linalg::LinalgOp op, func::FuncOp parent,
                       unsigned index) {
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
  SmallVector<Type> parameterTypes;
  for (Value argument : arguments)
    parameterTypes.push_back(getParameterType(argument.getType()));
  auto callee = func::FuncOp::create(
      op.getLoc(), "outlined", builder.getFunctionType(parameterTypes, {}));
  callee.setPrivate();
  callee.setNoInline(true);
  // convert-func-to-llvm drops no_inline but keeps LLVM's own attributes.
  callee->setAttr("passthrough",
                  builder.getArrayAttr(builder.getStringAttr("noinline")));
  // Private to the module in LLVM too: otherwise external, and the
  // ExecutionEngine would compile a packed wrapper for each.
  callee->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(builder.getContext(), LLVM::Linkage::Internal));
  IRMapping mapping;
  Block *body = callee.addEntryBlock();
  mapping.map(arguments, body->getArguments());
  builder.setInsertionPointToStart(body);
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  builder.clone(*op, mapping);
  func::ReturnOp::create(builder, op.getLoc());

  std::string text;
  llvm::raw_string_ostream os(text);
  callee->print(os, OpPrintingFlags().printGenericOpForm());
  auto [known, isNew] = functionsByBody.try_emplace(text, callee);
  if (isNew) {
    callee.setName((parent.getName() + "_" + op->getName().stripDialect() +
                    "_" + Twine(index))
                       .str());
    symbols.insert(callee, std::next(Block::iterator(previous)));
    previous = callee;
  } else {
    callee.erase();
  }

  builder.setInsertionPoint(op);
  SmallVector<Value> operands;
  for (auto [argument, type] : llvm::zip(arguments, parameterTypes))
    operands.push_back(
        argument.getType() == type
            ? argument
            : memref::CastOp::create(builder, op.getLoc(), type, argument));
  func::CallOp::create(builder, op.getLoc(), known->second, operands);
  op->erase();
}

} // namespace

void OutlineLinalgOpsPass::runOnOperation() {
  ModuleOp module = getOperation();
  Outliner outliner(module);
  for (auto parent : llvm::to_vector(module.getOps<func::FuncOp>())) {
    SmallVector<linalg::LinalgOp> ops;
    parent.walk<WalkOrder::PreOrder>([&](linalg::LinalgOp op) {
      if (op->getNumResults() == 0)
        ops.push_back(op);
      return WalkResult::skip();
    });
    outliner.insertAfter(parent);
    for (auto [index, op] : llvm::enumerate(ops))
      outliner.outline(op, parent, index);
  }
}
