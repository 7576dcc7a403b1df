//===- CollectiveBufferization.cpp - shard collectives to runtime calls ---===//
//
// The collectives of a per-rank program (lib/Parallel) bufferize like any
// tensor op, into calls of the collective runtime on their buffers
// (runtime/VramCollectives.cpp on MPI for the CPU, VramCollectivesNccl.cpp
// for the GPU: the same functions, `vramCollective*`, `<T>` the element
// type):
//
//   all_reduce <average>   in place: AllReduceAverage_<T>(buffer, group)
//   all_reduce <sum>       in place: AllReduceSum_<T>(buffer, group)
//   all_gather             AllGather_<T>(input, new buffer, group)
//   reduce_scatter <avg>   ReduceScatterAverage_<T>(input, new buffer, group)
//   reduce_scatter <sum>   ReduceScatterSum_<T>(input, new buffer, group)
//   all_slice              a subview at this rank's offset along its axis:
//                          vramCollectiveGroupIndex(group) x the slice's size
//
// A gather and a reduce-scatter move contiguous parts: along an axis whose
// outer dims are 1 (flat tensors; [1, tokens, hidden]).
//   send (a pipeline's)    Send(buffer, group, peer, element bytes): the
//                          buffer to the group's rank `peer`; the result is
//                          the buffer
//   recv                   in place: Recv(buffer, group, peer, element bytes)
//
// `group` is two i64: the number of ranks the collective spans (its grid
// axes) and their stride in the row-major grid, from which the runtime
// finds the world ranks of this rank's group.
// Upstream's convert-shard-to-mpi lowers the grid queries, all_reduce and
// update_halo to the MPI dialect, which has no all-gather or reduce-scatter,
// and MPI only; one runtime interface serves MPI and NCCL here.
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

/// The ranks a collective spans: the product of its grid axes' sizes, and
/// their stride in the row-major grid (the product of the later axes').
struct RankGroup {
  int64_t size = 1, stride = 1;
};

FailureOr<RankGroup> getRankGroup(Operation *op, FlatSymbolRefAttr gridName,
                                  ArrayRef<shard::GridAxis> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid)
    return op->emitError() << "no grid " << gridName;
  ArrayRef<int64_t> shape = grid.getShape();
  if (llvm::any_of(shape, ShapedType::isDynamic))
    return op->emitError() << "the grid " << gridName
                           << " must have a static shape to be lowered";
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis < 0 || axis >= int64_t(shape.size()) ||
        (i > 0 && axis != axes[i - 1] + 1))
      return op->emitError() << "a collective's grid axes must be adjacent, "
                                "in order, to be lowered";
  RankGroup group;
  for (shard::GridAxis axis : axes)
    group.size *= shape[axis];
  for (int64_t extent : shape.drop_front(axes.empty() ? 0 : axes.back() + 1))
    group.stride *= extent;
  return group;
}

/// Whether the ranks' parts of `type` along `axis` are contiguous, one
/// after the other: every dim before it is 1 (a sequence-parallel
/// [1, tokens, hidden] split along the tokens is; ZeRO's flat tensors are).
bool isContiguousAlong(ShapedType type, int64_t axis) {
  return axis >= 0 && axis < type.getRank() &&
         llvm::all_of(type.getShape().take_front(axis),
                      [](int64_t dim) { return dim == 1; });
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

/// The group's size and stride, as arguments of a runtime call.
SmallVector<Value> getGroupArguments(RewriterBase &rewriter, Location loc,
                                     RankGroup group) {
  return {arith::ConstantOp::create(rewriter, loc,
                                    rewriter.getI64IntegerAttr(group.size)),
          arith::ConstantOp::create(rewriter, loc,
                                    rewriter.getI64IntegerAttr(group.stride))};
}

/// Calls the runtime function `name` with `buffers` as unranked memrefs
/// followed by the group and the i64s `trailing`.
LogicalResult callRuntime(RewriterBase &rewriter, Operation *op, StringRef name,
                          ValueRange buffers, RankGroup group,
                          ArrayRef<int64_t> trailing = {}) {
  Location loc = op->getLoc();
  SmallVector<Value> arguments;
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    arguments.push_back(memref::CastOp::create(
        rewriter, loc,
        UnrankedMemRefType::get(type.getElementType(), type.getMemorySpace()),
        buffer));
  }
  llvm::append_range(arguments, getGroupArguments(rewriter, loc, group));
  for (int64_t value : trailing)
    arguments.push_back(arith::ConstantOp::create(
        rewriter, loc, rewriter.getI64IntegerAttr(value)));
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
                              RankGroup group) {
  Location loc = op->getLoc();
  Type i64 = rewriter.getI64Type();
  FailureOr<func::FuncOp> callee = getCallee(
      op, "vramCollectiveGroupIndex", rewriter.getFunctionType({i64, i64}, i64),
      /*takesBuffers=*/false);
  if (failed(callee))
    return failure();
  Value rank = func::CallOp::create(rewriter, loc, *callee,
                                    getGroupArguments(rewriter, loc, group))
                   .getResult(0);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                    rank)
      .getResult();
}

/// The model of an op whose result is its operand's buffer, which it reads
/// and/or writes in place.
template <typename Model, typename Op, bool Reads, bool Writes>
struct OnOperandBuffer : BufferizableOpInterface::ExternalModel<Model, Op> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return Reads;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return Writes;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
};

/// all_reduce: in place on its operand's buffer, like a destination.
struct AllReduceModel
    : OnOperandBuffer<AllReduceModel, shard::AllReduceOp, /*Reads=*/true,
                      /*Writes=*/true> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto allReduce = cast<shard::AllReduceOp>(op);
    shard::ReductionKind kind = allReduce.getReduction();
    if ((kind != shard::ReductionKind::Average &&
         kind != shard::ReductionKind::Sum) ||
        allReduce.getInput().getType() != allReduce.getType())
      return op->emitError("only an all-reduce <average> or <sum> in the "
                           "input's type has a runtime function");
    FailureOr<RankGroup> group =
        getRankGroup(op, allReduce.getGridAttr(), allReduce.getGridAxes());
    FailureOr<std::string> suffix =
        getTypeSuffix(op, getElementTypeOrSelf(allReduce.getType()));
    FailureOr<Value> buffer =
        getBuffer(rewriter, allReduce.getInput(), options, state);
    if (failed(group) || failed(suffix) || failed(buffer))
      return failure();
    StringRef name = kind == shard::ReductionKind::Sum
                         ? "vramCollectiveAllReduceSum"
                         : "vramCollectiveAllReduceAverage";
    if (failed(
            callRuntime(rewriter, op, (name + *suffix).str(), *buffer, *group)))
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
    int64_t axis;
    if constexpr (std::is_same_v<Op, shard::ReduceScatterOp>) {
      shard::ReductionKind kind = collective.getReduction();
      if (kind != shard::ReductionKind::Average &&
          kind != shard::ReductionKind::Sum)
        return op->emitError("only a reduce-scatter <average> or <sum> has a "
                             "runtime function");
      name = kind == shard::ReductionKind::Sum
                 ? "vramCollectiveReduceScatterSum"
                 : "vramCollectiveReduceScatterAverage";
      axis = collective.getScatterAxis().getSExtValue();
    } else {
      axis = collective.getGatherAxis().getSExtValue();
    }
    auto type = cast<RankedTensorType>(collective.getType());
    if (!isContiguousAlong(type, axis))
      return op->emitError("only collectives along the first axis that is "
                           "not 1 have a runtime function");
    FailureOr<RankGroup> group =
        getRankGroup(op, collective.getGridAttr(), collective.getGridAxes());
    FailureOr<std::string> suffix = getTypeSuffix(op, type.getElementType());
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(group) || failed(suffix) || failed(input))
      return failure();
    Value output = memref::AllocOp::create(
        rewriter, op->getLoc(),
        MemRefType::get(type.getShape(), type.getElementType()));
    if (failed(callRuntime(rewriter, op, (name + *suffix).str(),
                           {*input, output}, *group)))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, output);
    return success();
  }
};

/// all_slice: the rank's part of its (replicated) input along the slice
/// axis, a view (strided but for a 1-d slice or one whose outer dims are 1).
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
  /// The view's type: the slice's shape with the input's row-major strides
  /// and an offset known at run time (the rank's).
  static MemRefType getViewType(shard::AllSliceOp slice,
                                Attribute memorySpace) {
    auto input = cast<RankedTensorType>(slice.getInput().getType());
    auto sliceType = cast<RankedTensorType>(slice.getType());
    SmallVector<int64_t> strides(input.getRank(), 1);
    for (int64_t d = input.getRank() - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * input.getDimSize(d + 1);
    return MemRefType::get(sliceType.getShape(), sliceType.getElementType(),
                           StridedLayoutAttr::get(slice.getContext(),
                                                  ShapedType::kDynamic,
                                                  strides),
                           memorySpace);
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
    return cast<BufferLikeType>(
        getViewType(slice, cast<MemRefType>(*source).getMemorySpace()));
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto slice = cast<shard::AllSliceOp>(op);
    auto type = cast<RankedTensorType>(slice.getType());
    int64_t axis = slice.getSliceAxis().getSExtValue();
    if (!type.hasStaticShape() || axis < 0 || axis >= type.getRank())
      return op->emitError("only static slices along one of their axes are "
                           "lowered");
    FailureOr<RankGroup> group =
        getRankGroup(op, slice.getGridAttr(), slice.getGridAxes());
    FailureOr<Value> source =
        getBuffer(rewriter, slice.getInput(), options, state);
    if (failed(group) || failed(source))
      return failure();
    Location loc = op->getLoc();
    FailureOr<Value> rank = getRankIndex(rewriter, op, *group);
    if (failed(rank))
      return failure();
    Value extent =
        arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(axis));
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    offsets[axis] =
        arith::MulIOp::create(rewriter, loc, *rank, extent).getResult();
    SmallVector<OpFoldResult> sizes,
        strides(type.getRank(), rewriter.getIndexAttr(1));
    for (int64_t dim : type.getShape())
      sizes.push_back(rewriter.getIndexAttr(dim));
    Value view = memref::SubViewOp::create(
        rewriter, loc,
        getViewType(slice,
                    cast<MemRefType>(source->getType()).getMemorySpace()),
        *source, offsets, sizes, strides);
    replaceOpWithBufferizedValues(rewriter, op, view);
    return success();
  }
};

/// send and recv (between pipeline stages): on their operand's buffer, the
/// peer its index in the group. A send reads it, a receive fills it in
/// place; either result is that buffer. The runtime moves bytes, whatever
/// the element type (the memref passes without it, so its size goes too).
template <typename Op, bool Receives = std::is_same_v<Op, shard::RecvOp>>
struct PointToPointModel
    : OnOperandBuffer<PointToPointModel<Op>, Op, /*Reads=*/!Receives,
                      /*Writes=*/Receives> {
  static constexpr bool kReceives = Receives;

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto transfer = cast<Op>(op);
    ArrayRef<int64_t> peer;
    if constexpr (kReceives)
      peer = transfer.getSource().value_or(ArrayRef<int64_t>());
    else
      peer = transfer.getDestination();
    if (peer.size() != 1 || ShapedType::isDynamic(peer[0]) ||
        transfer.getGridAxes().size() != 1)
      return op->emitError("only a transfer along one grid axis, to a "
                           "static peer, has a runtime function");
    FailureOr<RankGroup> group =
        getRankGroup(op, transfer.getGridAttr(), transfer.getGridAxes());
    FailureOr<Value> buffer =
        getBuffer(rewriter, transfer.getInput(), options, state);
    if (failed(group) || failed(buffer))
      return failure();
    Type element = cast<MemRefType>(buffer->getType()).getElementType();
    int64_t elementBytes = (element.getIntOrFloatBitWidth() + 7) / 8;
    if (failed(
            callRuntime(rewriter, op,
                        kReceives ? "vramCollectiveRecv" : "vramCollectiveSend",
                        *buffer, *group, {peer[0], elementBytes})))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
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
    shard::SendOp::attachInterface<PointToPointModel<shard::SendOp>>(*context);
    shard::RecvOp::attachInterface<PointToPointModel<shard::RecvOp>>(*context);
  });
}

} // namespace vram
