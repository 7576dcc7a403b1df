//===- CallLibraryKernels.cpp - vram-call-library-kernels -----------------===//
//
// Heavy f32 linalg ops on buffers become calls of a library: BLAS kernels on
// CPU (runtime/VramCpuKernels.cpp), cuBLAS and cuDNN on GPU
// (runtime/VramGpuLibraries.cpp). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/RuntimeFunctions.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Pipelines/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace vram {
#define GEN_PASS_DEF_CALLLIBRARYKERNELSPASS
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
/// A kernel, named without its library's prefix and element type suffix,
/// and the integers it takes after the buffers.
struct KernelCall {
  StringRef name;
  SmallVector<int64_t> scalars;
  bool isConvolution = false;
  /// The GPU library's workspace for a convolution.
  std::optional<int64_t> workspaceBytes;
  /// The broadcast of a per-feature bias that initialized a convolution's
  /// output, which the CPU kernel's `_bias` variant does instead.
  linalg::BroadcastOp bias;
};
} // namespace

/// The call of kernel `name` for a convolution: its strides and dilations
/// per spatial dim, the ops' defaults (1) where the IR leaves them out.
template <typename ConvOp>
static KernelCall getConvolutionCall(ConvOp conv, StringRef name) {
  KernelCall call{name, {}, /*isConvolution=*/true};
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
    return KernelCall{"matmul", {transposes->first, transposes->second}};
  }
  if (auto batched = dyn_cast<linalg::BatchMatmulOp>(*op))
    return batched.hasUserDefinedMaps()
               ? std::nullopt
               : std::optional(KernelCall{"batch_matmul", {}});
  if (auto conv = dyn_cast<linalg::Conv1DNcwFcwOp>(*op))
    return getConvolutionCall(conv, "conv1d_ncw_fcw");
  if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(*op))
    return getConvolutionCall(conv, "conv2d_nchw_fchw");
  if (auto conv = dyn_cast<linalg::Conv3DNcdhwFcdhwOp>(*op))
    return getConvolutionCall(conv, "conv3d_ncdhw_fcdhw");
  if (auto conv = dyn_cast<linalg::Conv2DNgchwGfchwOp>(*op))
    return getConvolutionCall(conv, "conv2d_ngchw_gfchw");
  return std::nullopt;
}

/// Bytes of the workspace the GPU library gets for a convolution on
/// buffers: the column matrix of one image, input channels (all groups) x
/// filter taps x output positions, as CostModel.cpp's im2colWorkspace
/// counts it for the analysis; none for a 1x1 filter with unit strides,
/// which is a plain product. The operands are input, filter, output, with
/// the spatial dims last. None for dynamic shapes.
static std::optional<int64_t>
getConvolutionWorkspaceBytes(linalg::LinalgOp conv, const KernelCall &call) {
  auto input = cast<MemRefType>(conv->getOperand(0).getType());
  auto filter = cast<MemRefType>(conv->getOperand(1).getType());
  auto output = cast<MemRefType>(conv->getOperand(2).getType());
  if (!input.hasStaticShape() || !filter.hasStaticShape() ||
      !output.hasStaticShape())
    return std::nullopt;
  size_t spatial = call.scalars.size() / 2;
  ArrayRef<int64_t> taps = filter.getShape().take_back(spatial);
  ArrayRef<int64_t> strides = ArrayRef(call.scalars).take_front(spatial);
  auto isOne = [](int64_t size) { return size == 1; };
  if (llvm::all_of(taps, isOne) && llvm::all_of(strides, isOne))
    return 0;
  // NCHW and NGCHW alike: every dim between the batch and the spatial dims
  // counts as channels.
  int64_t channels =
      computeProduct(input.getShape().drop_front().drop_back(spatial));
  int64_t positions = computeProduct(output.getShape().take_back(spatial));
  return channels * computeProduct(taps) * positions * int64_t(sizeof(float));
}

/// The broadcast that initialized `conv`'s output with a bias per output
/// feature, if one did right before it: a `linalg.broadcast` of a 1-d f32
/// buffer along every dim but dim 1 (the features) of a contiguous buffer,
/// which the convolution writes directly or through an expand_shape (a
/// grouped convolution's groups x features), with nothing but views and
/// constants between. Its kernel then writes the bias into each image's
/// output just before accumulating into it, on that image's thread and while
/// the output is in cache, instead of a pass over the whole output first.
static linalg::BroadcastOp getBiasInitialization(linalg::LinalgOp conv) {
  Operation *previous = conv->getPrevNode();
  while (previous && isMemoryEffectFree(previous))
    previous = previous->getPrevNode();
  auto broadcast = dyn_cast_or_null<linalg::BroadcastOp>(previous);
  if (!broadcast || !broadcast.hasPureBufferSemantics())
    return nullptr;
  Value output = conv.getDpsInitOperand(0)->get();
  while (auto expand = output.getDefiningOp<memref::ExpandShapeOp>())
    output = expand.getSrc();
  Value init = broadcast.getInit();
  auto type = cast<MemRefType>(init.getType());
  if (output != init || !isContiguousF32(init) || type.getRank() < 2 ||
      !isContiguousF32(broadcast.getInput()))
    return nullptr;
  SmallVector<int64_t> allButFeatures = {0};
  for (int64_t dim = 2; dim < type.getRank(); ++dim)
    allButFeatures.push_back(dim);
  return broadcast.getDimensions() == ArrayRef(allButFeatures) ? broadcast
                                                               : nullptr;
}

namespace {
struct CallLibraryKernelsPass
    : public vram::impl::CallLibraryKernelsPassBase<CallLibraryKernelsPass> {
  using CallLibraryKernelsPassBase::CallLibraryKernelsPassBase;

  void runOnOperation() override {
    if (target != "cpu" && target != "gpu") {
      getOperation().emitError("vram-call-library-kernels: unknown target '")
          << target << "' (expected cpu or gpu)";
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SmallVector<std::pair<Operation *, KernelCall>> heavy;
    module.walk([&](linalg::LinalgOp op) {
      std::optional<KernelCall> call = getKernelCall(op);
      if (!call)
        return;
      if (target == "cpu" && call->isConvolution)
        call->bias = getBiasInitialization(op);
      // cuDNN's workspace is sized here, so its shapes must be known.
      if (target == "gpu" && call->isConvolution) {
        call->workspaceBytes = getConvolutionWorkspaceBytes(op, *call);
        if (!call->workspaceBytes)
          return;
        auto func = op->getParentOfType<FunctionOpInterface>();
        if (func &&
            func->hasAttr(vram::VramDialect::kNoLibraryWorkspaceAttrName))
          call->workspaceBytes = 0;
      }
      heavy.push_back({op, *call});
    });
    for (auto &[op, call] : heavy)
      if (failed(replaceByCall(op, call, symbols)))
        return signalPassFailure();
  }

  /// Replaces `op` by `call`. A bias or a workspace comes right after the
  /// op's buffers.
  LogicalResult replaceByCall(Operation *op, const KernelCall &call,
                              SymbolTableCollection &symbols) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    SmallVector<Value> buffers(op->getOperands());
    linalg::BroadcastOp bias = call.bias;
    if (bias)
      buffers.push_back(bias.getInput());
    if (call.workspaceBytes)
      buffers.push_back(memref::AllocOp::create(
          builder, loc,
          MemRefType::get({*call.workspaceBytes}, builder.getI8Type())));
    SmallVector<Value> arguments = castToDynamic(builder, loc, buffers);
    for (int64_t scalar : call.scalars)
      arguments.push_back(arith::ConstantOp::create(
          builder, loc, builder.getI64IntegerAttr(scalar)));
    std::string name = (Twine(target == "gpu" ? "vram_gpu_" : "vram_") +
                        call.name + (call.bias ? "_bias" : "") + "_f32")
                           .str();
    FailureOr<func::FuncOp> kernel = vram::getRuntimeFunction(
        getOperation(), name,
        builder.getFunctionType(ValueRange(arguments).getTypes(), {}),
        /*cInterface=*/true, symbols);
    if (failed(kernel))
      return failure();
    func::CallOp::create(builder, loc, *kernel, arguments);
    op->erase();
    if (bias)
      bias->erase();
    return success();
  }
};
} // namespace
