//===- CollectiveBufferization.cpp - shard collectives to runtime calls ---===//
//
// The collectives of a per-rank program (lib/Parallel) bufferize like any
// tensor op, into calls of the collective runtime on their buffers
// (runtime/VramCollectives.cpp on MPI for the CPU, VramCollectivesNccl.cpp
// for the GPU: the same functions, `vramCollective*`, `<T>` the element
// type):
//
//   all_reduce <average>   in place: AllReduceAverage_<T>(buffer, ranks)
//   all_gather             AllGather_<T>(input, new buffer, ranks)
//   reduce_scatter <avg>   ReduceScatterAverage_<T>(input, new buffer, ranks)
//   all_slice              a subview at this rank's offset:
//                          vramCollectiveRank(ranks) x the slice's size
//
// Upstream's convert-shard-to-mpi lowers the grid queries, all_reduce and
// update_halo to the MPI dialect, which has no all-gather or reduce-scatter,
// and MPI only; one runtime interface serves MPI and NCCL here, over the
// grid's data axis (the only one in use).
// Buffers go as unranked memrefs (`llvm.emit_c_interface`): the runtime
// reads any rank and checks that the data is contiguous.
//
//===----------------------------------------------------------------------===//

#include "vram/Conversion/Collectives/CollectiveBufferization.h"
#include "vram/Conversion/RuntimeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace vram {
namespace {

/// The number of ranks a collective spans: the product of its grid axes'
/// sizes.
FailureOr<int64_t> getGroupSize(Operation *op, FlatSymbolRefAttr gridName,
                                ArrayRef<shard::GridAxis> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid)
    return op->emitError() << "no grid " << gridName;
  int64_t size = 1;
  for (shard::GridAxis axis : axes) {
    int64_t extent = grid.getShape()[axis];
    if (ShapedType::isDynamic(extent))
      return op->emitError() << "the grid's axis " << axis
                             << " must have a static size to be lowered";
    size *= extent;
  }
  return size;
}

/// `_f32`, `_f16`, `_bf16`, `_f64`: the runtime entry for the element type.
FailureOr<std::string> getTypeSuffix(Operation *op, Type element) {
  if (element.isF32())
    return std::string("_f32");
  if (element.isF16())
    return std::string("_f16");
  if (element.isBF16())
    return std::string("_bf16");
  if (element.isF64())
    return std::string("_f64");
  return op->emitError() << "collectives on " << element
                         << " elements have no runtime function";
}

/// The runtime function `name` of type `type`, declared on first use;
/// buffers go through its C interface.
FailureOr<func::FuncOp> getCallee(Operation *op, StringRef name,
                                  FunctionType type, bool takesBuffers) {
  SymbolTableCollection symbols;
  return getRuntimeFunction(op->getParentOfType<ModuleOp>(), name, type,
                            takesBuffers, symbols);
}

/// Calls the runtime function `name` with `buffers` as unranked memrefs
/// followed by the group size.
LogicalResult callRuntime(RewriterBase &rewriter, Operation *op, StringRef name,
                          ValueRange buffers, int64_t ranks) {
  Location loc = op->getLoc();
  SmallVector<Value> arguments;
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    arguments.push_back(memref::CastOp::create(
        rewriter, loc,
        UnrankedMemRefType::get(type.getElementType(), type.getMemorySpace()),
        buffer));
  }
  arguments.push_back(arith::ConstantOp::create(
      rewriter, loc, rewriter.getI64IntegerAttr(ranks)));
  FailureOr<func::FuncOp> callee = getCallee(
      op, name, rewriter.getFunctionType(ValueRange(arguments).getTypes(), {}),
      /*takesBuffers=*/true);
  if (failed(callee))
    return failure();
  func::CallOp::create(rewriter, loc, *callee, arguments);
  return success();
}

/// The rank's index in the group, from the runtime.
FailureOr<Value> getRankIndex(RewriterBase &rewriter, Operation *op,
                              int64_t ranks) {
  Location loc = op->getLoc();
  Type i64 = rewriter.getI64Type();
  FailureOr<func::FuncOp> callee =
      getCallee(op, "vramCollectiveRank", rewriter.getFunctionType(i64, i64),
                /*takesBuffers=*/false);
  if (failed(callee))
    return failure();
  Value size = arith::ConstantOp::create(rewriter, loc,
                                         rewriter.getI64IntegerAttr(ranks));
  Value rank = func::CallOp::create(rewriter, loc, *callee, size).getResult(0);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                    rank)
      .getResult();
}

/// all_reduce: in place on its operand's buffer, like a destination.
struct AllReduceModel
    : BufferizableOpInterface::ExternalModel<AllReduceModel,
                                             shard::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto allReduce = cast<shard::AllReduceOp>(op);
    if (allReduce.getReduction() != shard::ReductionKind::Average ||
        allReduce.getInput().getType() != allReduce.getType())
      return op->emitError("only an all-reduce <average> in the input's type "
                           "has a runtime function");
    FailureOr<int64_t> ranks =
        getGroupSize(op, allReduce.getGridAttr(), allReduce.getGridAxes());
    FailureOr<std::string> suffix =
        getTypeSuffix(op, getElementTypeOrSelf(allReduce.getType()));
    FailureOr<Value> buffer =
        getBuffer(rewriter, allReduce.getInput(), options, state);
    if (failed(ranks) || failed(suffix) || failed(buffer))
      return failure();
    if (failed(callRuntime(rewriter, op,
                           "vramCollectiveAllReduceAverage" + *suffix, *buffer,
                           *ranks)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// all_gather and reduce_scatter: read the input, write a new buffer.
template <typename Op>
struct ExchangeModel
    : BufferizableOpInterface::ExternalModel<ExchangeModel<Op>, Op> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<Op>(op);
    StringRef name = "vramCollectiveAllGather";
    if constexpr (std::is_same_v<Op, shard::ReduceScatterOp>) {
      if (collective.getReduction() != shard::ReductionKind::Average)
        return op->emitError("only a reduce-scatter <average> has a runtime "
                             "function");
      name = "vramCollectiveReduceScatterAverage";
    }
    auto type = cast<RankedTensorType>(collective.getType());
    if (type.getRank() != 1)
      return op->emitError("only 1-d collectives have a runtime function");
    FailureOr<int64_t> ranks =
        getGroupSize(op, collective.getGridAttr(), collective.getGridAxes());
    FailureOr<std::string> suffix = getTypeSuffix(op, type.getElementType());
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(ranks) || failed(suffix) || failed(input))
      return failure();
    Value output = memref::AllocOp::create(
        rewriter, op->getLoc(),
        MemRefType::get(type.getShape(), type.getElementType()));
    if (failed(callRuntime(rewriter, op, (name + *suffix).str(),
                           {*input, output}, *ranks)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, output);
    return success();
  }
};

/// all_slice: the rank's part of its (replicated) input, a view.
struct AllSliceModel
    : BufferizableOpInterface::ExternalModel<AllSliceModel, shard::AllSliceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Unknown}};
  }
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    auto slice = cast<shard::AllSliceOp>(op);
    FailureOr<BufferLikeType> source = bufferization::getBufferType(
        slice.getInput(), options, state, invocationStack);
    if (failed(source))
      return failure();
    auto sliceType = cast<RankedTensorType>(slice.getType());
    return cast<BufferLikeType>(MemRefType::get(
        sliceType.getShape(), sliceType.getElementType(),
        StridedLayoutAttr::get(op->getContext(), ShapedType::kDynamic, {1}),
        cast<MemRefType>(*source).getMemorySpace()));
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto slice = cast<shard::AllSliceOp>(op);
    auto type = cast<RankedTensorType>(slice.getType());
    if (type.getRank() != 1)
      return op->emitError("only 1-d slices are lowered");
    FailureOr<int64_t> ranks =
        getGroupSize(op, slice.getGridAttr(), slice.getGridAxes());
    FailureOr<Value> source =
        getBuffer(rewriter, slice.getInput(), options, state);
    if (failed(ranks) || failed(source))
      return failure();
    Location loc = op->getLoc();
    FailureOr<Value> rank = getRankIndex(rewriter, op, *ranks);
    if (failed(rank))
      return failure();
    Value extent =
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(0));
    Value offset = arith::MulIOp::create(rewriter, loc, *rank, extent);
    Value view = memref::SubViewOp::create(
        rewriter, loc, *source, ArrayRef<OpFoldResult>{offset},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(type.getDimSize(0))},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
    replaceOpWithBufferizedValues(rewriter, op, view);
    return success();
  }
};

} // namespace

void registerCollectiveBufferizationExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, shard::ShardDialect *) {
    context->loadDialect<arith::ArithDialect, func::FuncDialect,
                         memref::MemRefDialect>();
    shard::AllReduceOp::attachInterface<AllReduceModel>(*context);
    shard::AllGatherOp::attachInterface<ExchangeModel<shard::AllGatherOp>>(
        *context);
    shard::ReduceScatterOp::attachInterface<
        ExchangeModel<shard::ReduceScatterOp>>(*context);
    shard::AllSliceOp::attachInterface<AllSliceModel>(*context);
  });
}

} // namespace vram
