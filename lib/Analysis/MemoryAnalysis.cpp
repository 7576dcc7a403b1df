//===- MemoryAnalysis.cpp - live bytes over a function's schedule ---------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/CostModel.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/ONNX/TensorSize.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Analysis/Liveness.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;

namespace vram {

/// The buffer an all-gather fills in place: the one its input is this
/// rank's slice of (NCCL's and MPI's in-place all-gather), through updates
/// written in place; null when the gather needs a buffer of its own.
static Value getGatherDestination(shard::AllGatherOp gather) {
  Value part = gather.getInput();
  while (auto result = dyn_cast_if_present<OpResult>(part)) {
    if (auto slice = dyn_cast<shard::AllSliceOp>(result.getOwner()))
      return slice.getInput().getType() == gather.getType() &&
                     slice.getGrid() == gather.getGrid() &&
                     slice.getGridAxes() == gather.getGridAxes() &&
                     slice.getSliceAxis() == gather.getGatherAxis()
                 ? slice.getInput()
                 : nullptr;
    part = getAliasedOperand(result);
  }
  return nullptr;
}

Value getAliasedOperand(OpResult result) {
  Operation *op = result.getOwner();
  // Collectives (lib/Parallel): all-reduce works in place; a rank's slice is
  // a view of the replicated tensor, and so is a tensor-parallel layer's
  // copy of its input (isViewOf).
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
    return allReduce.getInput().getType() == allReduce.getType()
               ? allReduce.getInput()
               : nullptr;
  if (auto slice = dyn_cast<shard::AllSliceOp>(op))
    return slice.getInput();
  // A pipeline's transfers: a receive fills its destination in place, and
  // a send's result is the tensor it sent.
  if (auto recv = dyn_cast<shard::RecvOp>(op))
    return recv.getInput();
  if (auto send = dyn_cast<shard::SendOp>(op))
    return send.getInput();
  if (auto copy = dyn_cast<TensorParallelCopyOp>(op))
    return copy.getInput();
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    return getGatherDestination(gather);
  if (auto scatter = dyn_cast<ONNXScatterElementsOp>(op))
    return scatter.updatesDataInPlace() ? scatter.getData() : nullptr;
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    if (view.getViewDest() == result)
      return view.getViewSource();
  if (auto bufferizable = dyn_cast<bufferization::BufferizableOpInterface>(op)) {
    // Alias queries of tensor ops need no analysis state beyond options.
    bufferization::BufferizationOptions options;
    bufferization::AnalysisState state(options);
    bufferization::AliasingOpOperandList aliases =
        bufferizable.getAliasingOpOperands(result, state);
    if (aliases.getNumAliases() == 1 &&
        aliases.getAliases().front().isDefinite)
      return aliases.getAliases().front().opOperand->get();
    return nullptr;
  }
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
    return dps.getTiedOpOperand(result)->get();
  return nullptr;
}

bool isViewOf(OpResult result, Value source) {
  if (auto slice = dyn_cast<shard::AllSliceOp>(result.getOwner()))
    return slice.getInput() == source;
  // A sent tensor is unchanged: the send's result is the tensor itself.
  if (auto send = dyn_cast<shard::SendOp>(result.getOwner()))
    return send.getInput() == source;
  if (auto copy = dyn_cast<TensorParallelCopyOp>(result.getOwner()))
    return copy.getInput() == source;
  auto view = dyn_cast<ViewLikeOpInterface>(result.getOwner());
  return view && view.getViewDest() == result && view.getViewSource() == source;
}

void markGradientStorage(Value value) {
  while (auto result = dyn_cast_if_present<OpResult>(value)) {
    Operation *producer = result.getOwner();
    if (!isBackwardOp(producer))
      return;
    setCategory(producer, MemoryCategory::Gradient);
    value = getAliasedOperand(result);
  }
}

void forEachStorageUser(Value value, llvm::function_ref<bool(Operation *)> fn) {
  SmallVector<Value> storage{value};
  while (!storage.empty()) {
    Value current = storage.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (!fn(user))
        continue;
      for (OpResult result : user->getResults())
        if (getAliasedOperand(result) == current)
          storage.push_back(result);
    }
  }
}

std::string getOpName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  return op->getName().getStringRef().str();
}

std::string getValueName(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (func && arg.getOwner()->isEntryBlock())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                        "onnx.name"))
        return name.getValue().str();
    return "%arg" + std::to_string(arg.getArgNumber());
  }
  auto result = cast<OpResult>(value);
  std::string name = getOpName(result.getOwner());
  if (result.getOwner()->getNumResults() > 1)
    name += "#" + std::to_string(result.getResultNumber());
  return name;
}

std::string getBufferName(const Buffer &buffer) {
  if (buffer.workspaceOf)
    return "workspace of " + getOpName(buffer.workspaceOf);
  return getValueName(buffer.root);
}

std::string getBufferTypeString(const Buffer &buffer) {
  if (buffer.workspaceOf)
    return "workspace";
  std::string text;
  llvm::raw_string_ostream os(text);
  buffer.root.getType().print(os);
  return text;
}

void emitAnalysisErrors(const MemoryAnalysis &analysis, Operation *func) {
  if (analysis.getUnsizedValues().empty()) {
    func->emitError("memory analysis needs a function with a single-block "
                    "body");
    return;
  }
  constexpr size_t kMaxReported = 3;
  for (const UnsizedValue &value :
       analysis.getUnsizedValues().take_front(kMaxReported))
    emitError(value.value.getLoc())
        << "cannot size '" << getValueName(value.value) << "' of type "
        << value.value.getType() << ": " << value.reason
        << " (bind dynamic dimensions with --dim or --batch, and the inputs "
           "that decide shapes with --input-value)";
  if (analysis.getUnsizedValues().size() > kMaxReported)
    func->emitError() << analysis.getUnsizedValues().size() - kMaxReported
                      << " more values cannot be sized";
}

MemoryAnalysis::MemoryAnalysis(Operation *op) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || func.isExternal() || !llvm::hasSingleElement(func.getFunctionBody()))
    return;
  Block &body = func.getFunctionBody().front();
  for (Operation &scheduled : body.without_terminator())
    schedule.push_back(&scheduled);
  computeBuffers(body);
  if (!unsized.empty())
    return;
  addWorkspaces();
  computeTimeline();
  valid = true;
}

void MemoryAnalysis::computeBuffers(Block &body) {
  llvm::DenseMap<Operation *, unsigned> pointOf;
  for (auto [i, op] : llvm::enumerate(schedule))
    pointOf[op] = i;
  unsigned lastPoint = schedule.empty() ? 0 : schedule.size() - 1;

  // Group every value with the values it aliases; the first member of a
  // class in program order is the one that allocates.
  SmallVector<Value> values(body.getArguments().begin(),
                            body.getArguments().end());
  for (Operation *op : schedule)
    for (Value result : op->getResults())
      values.push_back(result);
  llvm::EquivalenceClasses<Value> aliasClasses;
  for (Value value : values) {
    aliasClasses.insert(value);
    if (auto result = dyn_cast<OpResult>(value))
      if (Value source = getAliasedOperand(result))
        aliasClasses.unionSets(value, source);
  }

  Liveness liveness(body.getParentOp());
  const LivenessBlockInfo *blockLiveness = liveness.getLiveness(&body);
  Operation *terminator = body.getTerminator();
  llvm::DenseMap<Value, unsigned> bufferOfLeader;
  struct BufferUses {
    bool returned = false, readByBackward = false;
  };
  std::vector<BufferUses> uses;
  for (Value value : values) {
    Value leader = aliasClasses.getLeaderValue(value);
    auto [it, inserted] = bufferOfLeader.try_emplace(leader, buffers.size());
    if (inserted) {
      Buffer buffer;
      buffer.root = value;
      // Scalars (indices, loop bounds) live in registers: 0 bytes.
      if (isa<ShapedType>(value.getType())) {
        FailureOr<uint64_t> bytes = getTensorByteSize(value.getType());
        if (succeeded(bytes))
          buffer.bytes = *bytes;
        else
          unsized.push_back({value, "its shape is not static or its size "
                                    "overflows 64 bits"});
      }
      auto result = dyn_cast<OpResult>(value);
      if (result && !result.getOwner()->hasTrait<OpTrait::ConstantLike>()) {
        buffer.begin = buffer.end = pointOf.lookup(result.getOwner());
      } else {
        // The caller owns arguments; constants are program data (globals
        // once bufferized). Both occupy memory at every point.
        buffer.begin = 0;
        buffer.end = lastPoint;
      }
      buffers.push_back(buffer);
      uses.emplace_back();
    }
    unsigned index = it->second;
    bufferOf[value] = index;
    Buffer &buffer = buffers[index];
    Operation *start = isa<OpResult>(value) ? value.getDefiningOp()
                                            : &body.front();
    Operation *lastUser = blockLiveness->getEndOperation(value, start);
    if (lastUser == terminator) {
      uses[index].returned = true;
      buffer.end = lastPoint;
    } else if (lastUser != start || !isa<OpResult>(value)) {
      buffer.end = std::max(buffer.end, pointOf.lookup(lastUser));
    }
    for (Operation *user : value.getUsers())
      if (isBackwardOp(body.findAncestorOpInBlock(*user)))
        uses[index].readByBackward = true;
  }
  for (auto [buffer, use] : llvm::zip(buffers, uses))
    buffer.category =
        classifyValue(buffer.root, use.returned, use.readByBackward);
}

/// Scratch memory an op's cost model declares lives while the op runs.
void MemoryAnalysis::addWorkspaces() {
  for (auto [point, op] : llvm::enumerate(schedule)) {
    uint64_t bytes = estimateOpCost(op).workspaceBytes;
    if (bytes == 0)
      continue;
    Buffer workspace;
    workspace.workspaceOf = op;
    workspace.bytes = bytes;
    workspace.category = MemoryCategory::Workspace;
    workspace.begin = workspace.end = point;
    buffers.push_back(workspace);
  }
}

void MemoryAnalysis::computeTimeline() {
  if (schedule.empty()) {
    // No op, no program point: what lives is the arguments, which are the
    // results too, and constants.
    for (const Buffer &buffer : buffers) {
      totals[static_cast<unsigned>(buffer.category)] += buffer.bytes;
      peakBytes += buffer.bytes;
    }
    return;
  }
  // A sweep over begin/end events keeps this linear in ops + buffers.
  std::vector<CategoryBytes> delta(schedule.size() + 1, CategoryBytes{});
  for (const Buffer &buffer : buffers) {
    unsigned category = static_cast<unsigned>(buffer.category);
    totals[category] += buffer.bytes;
    delta[buffer.begin][category] += buffer.bytes;
    delta[buffer.end + 1][category] -= buffer.bytes;
  }
  timeline.assign(schedule.size(), CategoryBytes{});
  CategoryBytes live{};
  for (unsigned point = 0; point < schedule.size(); ++point) {
    uint64_t sum = 0;
    for (unsigned c = 0; c < kNumMemoryCategories; ++c) {
      live[c] += delta[point][c];
      sum += live[c];
    }
    timeline[point] = live;
    if (sum > peakBytes || point == 0) {
      peakBytes = sum;
      peakPoint = point;
    }
  }
}

uint64_t MemoryAnalysis::getLiveBytes(unsigned point) const {
  uint64_t sum = 0;
  for (uint64_t bytes : timeline[point])
    sum += bytes;
  return sum;
}

SmallVector<unsigned> MemoryAnalysis::getLiveBuffers(unsigned point) const {
  SmallVector<unsigned> live;
  for (auto [index, buffer] : llvm::enumerate(buffers))
    if (buffer.begin <= point && point <= buffer.end)
      live.push_back(index);
  return live;
}

} // namespace vram
