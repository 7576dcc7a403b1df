//===- CallCPUKernels.cpp - vram-call-cpu-kernels -------------------------===//
//
// Heavy f32 linalg ops on buffers become calls of runtime/VramCpuKernels.cpp
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace vram {
#define GEN_PASS_DEF_CALLCPUKERNELSPASS
#include "vram/Pipelines/Passes.h.inc"
} // namespace vram

using namespace mlir;

/// An f32 memref with the identity layout in the default memory space: what
/// the kernels read as a contiguous row-major array.
static bool isContiguousF32(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getElementType().isF32() &&
         type.getLayout().isIdentity() && !type.getMemorySpace();
}

/// The op's operands cast to dynamic shapes, one kernel signature for all.
static SmallVector<Value> castToDynamic(OpBuilder &builder, Location loc,
                                        ValueRange operands) {
  SmallVector<Value> dynamicOperands;
  for (Value operand : operands) {
    auto type = cast<MemRefType>(operand.getType());
    SmallVector<int64_t> dynamic(type.getRank(), ShapedType::kDynamic);
    dynamicOperands.push_back(memref::CastOp::create(
        builder, loc, MemRefType::get(dynamic, type.getElementType()),
        operand));
  }
  return dynamicOperands;
}

/// The kernel that computes `op`, if one does: default indexing maps (no
/// transposed operands) and contiguous f32 buffers.
static std::optional<StringRef> getKernelName(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() ||
      !llvm::all_of(op->getOperands(), isContiguousF32))
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(*op))
    return matmul.hasUserDefinedMaps() ? std::nullopt
                                       : std::optional("vram_matmul_f32");
  if (auto batched = dyn_cast<linalg::BatchMatmulOp>(*op))
    return batched.hasUserDefinedMaps()
               ? std::nullopt
               : std::optional("vram_batch_matmul_f32");
  if (isa<linalg::Conv2DNchwFchwOp>(*op))
    return "vram_conv2d_nchw_fchw_f32";
  if (isa<linalg::Conv2DNgchwGfchwOp>(*op))
    return "vram_conv2d_ngchw_gfchw_f32";
  return std::nullopt;
}

namespace {
struct CallCPUKernelsPass
    : public vram::impl::CallCPUKernelsPassBase<CallCPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<std::pair<Operation *, StringRef>> heavy;
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<StringRef> kernel = getKernelName(op))
        heavy.push_back({op, *kernel});
    });
    for (auto [op, kernel] : heavy)
      replaceByCall(op, kernel, symbols);
  }

  /// The kernel's declaration, made on first use.
  func::FuncOp getKernel(StringRef name, TypeRange arguments,
                         SymbolTable &symbols) {
    if (auto existing = symbols.lookup<func::FuncOp>(name))
      return existing;
    OpBuilder builder(&getContext());
    auto kernel = func::FuncOp::create(getOperation().getLoc(), name,
                                       builder.getFunctionType(arguments, {}));
    kernel.setPrivate();
    kernel->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
    symbols.insert(kernel);
    return kernel;
  }

  /// Replaces `op` by a call of `name`; a convolution passes its strides
  /// and dilations after the buffers.
  void replaceByCall(Operation *op, StringRef name, SymbolTable &symbols) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    SmallVector<Value> arguments =
        castToDynamic(builder, loc, op->getOperands());
    // The convolutions' window attributes, named alike on both ops.
    for (StringRef window : {"strides", "dilations"})
      if (auto attr = op->getAttrOfType<DenseIntElementsAttr>(window))
        for (APInt value : attr)
          arguments.push_back(arith::ConstantOp::create(
              builder, loc, builder.getI64IntegerAttr(value.getSExtValue())));
    func::FuncOp kernel =
        getKernel(name, ValueRange(arguments).getTypes(), symbols);
    func::CallOp::create(builder, loc, kernel, arguments);
    op->erase();
  }
};
} // namespace
