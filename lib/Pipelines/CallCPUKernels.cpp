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

/// Whether a linalg.matmul reads A and B transposed: its maps are the
/// default ones or transpose either operand (a Gemm's transA/transB);
/// nullopt for any other maps.
static std::optional<std::pair<bool, bool>>
getTransposes(linalg::MatmulOp matmul) {
  if (!matmul.hasUserDefinedMaps())
    return std::pair(false, false);
  MLIRContext *context = matmul.getContext();
  AffineExpr m, n, k;
  bindDims(context, m, n, k);
  auto map = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(3, 0, results, context);
  };
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  bool transA = maps[0] == map({k, m}), transB = maps[1] == map({n, k});
  if ((!transA && maps[0] != map({m, k})) ||
      (!transB && maps[1] != map({k, n})) || maps[2] != map({m, n}))
    return std::nullopt;
  return std::pair(transA, transB);
}

namespace {
/// A kernel and the integers it takes after the buffers.
struct KernelCall {
  StringRef name;
  SmallVector<int64_t> scalars;
};
} // namespace

/// The call of kernel `name` for a convolution: its strides and dilations
/// per spatial dim, the ops' defaults (1) where the IR leaves them out.
template <typename ConvOp>
static KernelCall getConvolutionCall(ConvOp conv, StringRef name) {
  KernelCall call{name, {}};
  for (DenseIntElementsAttr window : {conv.getStrides(), conv.getDilations()})
    for (APInt value : window)
      call.scalars.push_back(value.getSExtValue());
  return call;
}

/// The kernel that computes `op`, if one does, on contiguous f32 buffers: a
/// matmul passes transA and transB, a convolution its strides and dilations.
static std::optional<KernelCall> getKernelCall(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() ||
      !llvm::all_of(op->getOperands(), isContiguousF32))
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(*op)) {
    std::optional<std::pair<bool, bool>> transposes = getTransposes(matmul);
    if (!transposes)
      return std::nullopt;
    return KernelCall{"vram_matmul_f32",
                      {transposes->first, transposes->second}};
  }
  if (auto batched = dyn_cast<linalg::BatchMatmulOp>(*op))
    return batched.hasUserDefinedMaps()
               ? std::nullopt
               : std::optional(KernelCall{"vram_batch_matmul_f32", {}});
  if (auto conv = dyn_cast<linalg::Conv1DNcwFcwOp>(*op))
    return getConvolutionCall(conv, "vram_conv1d_ncw_fcw_f32");
  if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(*op))
    return getConvolutionCall(conv, "vram_conv2d_nchw_fchw_f32");
  if (auto conv = dyn_cast<linalg::Conv3DNcdhwFcdhwOp>(*op))
    return getConvolutionCall(conv, "vram_conv3d_ncdhw_fcdhw_f32");
  if (auto conv = dyn_cast<linalg::Conv2DNgchwGfchwOp>(*op))
    return getConvolutionCall(conv, "vram_conv2d_ngchw_gfchw_f32");
  return std::nullopt;
}

namespace {
struct CallCPUKernelsPass
    : public vram::impl::CallCPUKernelsPassBase<CallCPUKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<std::pair<Operation *, KernelCall>> heavy;
    module.walk([&](linalg::LinalgOp op) {
      if (std::optional<KernelCall> call = getKernelCall(op))
        heavy.push_back({op, *call});
    });
    for (auto &[op, call] : heavy)
      replaceByCall(op, call, symbols);
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

  /// Replaces `op` by `call`.
  void replaceByCall(Operation *op, const KernelCall &call,
                     SymbolTable &symbols) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    SmallVector<Value> arguments =
        castToDynamic(builder, loc, op->getOperands());
    for (int64_t scalar : call.scalars)
      arguments.push_back(arith::ConstantOp::create(
          builder, loc, builder.getI64IntegerAttr(scalar)));
    func::FuncOp kernel =
        getKernel(call.name, ValueRange(arguments).getTypes(), symbols);
    func::CallOp::create(builder, loc, kernel, arguments);
    op->erase();
  }
};
} // namespace
