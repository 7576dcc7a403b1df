//===- IRPlanning.cpp - between a function's IR and the memory planner ----===//

#include "vram/Planning/IRPlanning.h"
#include "vram/Analysis/CostModel.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Planner/Schedule.h"
#include "vram/Support/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>

using namespace mlir;

namespace vram {

static bool isConstant(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>();
}

std::vector<Operation *> getPlannedOps(Block &body) {
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (!isConstant(&op))
      ops.push_back(&op);
  return ops;
}

/// Calls `fn` on every value `op` or an op nested in it reads.
template <typename Fn> static void forEachOperand(Operation *op, Fn fn) {
  op->walk([&](Operation *nested) {
    for (OpOperand &operand : nested->getOpOperands())
      fn(operand);
  });
}

std::vector<std::vector<Operation *>>
schedulesForMemory(Block &body, const MemoryAnalysis &analysis) {
  std::vector<Operation *> ops = getPlannedOps(body);
  llvm::DenseMap<Operation *, unsigned> indexOf;
  for (auto [i, op] : llvm::enumerate(ops))
    indexOf[op] = i;
  ArrayRef<Buffer> buffers = analysis.getBuffers();
  auto bufferIndex = [&](Value value) -> unsigned {
    return &analysis.getBuffer(value) - buffers.data();
  };

  // Per op: the ops it waits for, the buffers it reads and the buffers it
  // allocates.
  planner::OrderingProblem problem(ops.size());
  std::optional<unsigned> lastEffecting;
  for (auto [i, op] : llvm::enumerate(ops)) {
    forEachOperand(op, [&](OpOperand &operand) {
      Value value = operand.get();
      if (Operation *def = value.getDefiningOp())
        if (auto it = indexOf.find(def); it != indexOf.end())
          problem.addPredecessor(i, it->second);
      if (isa<ShapedType>(value.getType()))
        problem.addRead(i, bufferIndex(value));
    });
    for (Value result : op->getResults())
      if (isa<ShapedType>(result.getType()) &&
          analysis.getBuffer(result).root == result) {
        problem.allocatedBytes[i] += analysis.getBuffer(result).bytes;
        // Nothing reads it: freed once its producer has run.
        if (result.use_empty())
          problem.addRead(i, bufferIndex(result));
      }
    // Reordering ops with effects could change what the program computes.
    if (!isMemoryEffectFree(op)) {
      if (lastEffecting)
        problem.addPredecessor(i, *lastEffecting);
      lastEffecting = i;
    }
  }
  // An op writing a buffer in place (a destination-passing op: vram.update
  // into a parameter) runs after every op reading the value it overwrites,
  // directly or through views, which SSA alone does not say.
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto dps = dyn_cast<DestinationStyleOpInterface>(op);
    if (!dps)
      continue;
    for (Value overwritten : dps.getDpsInits())
      forEachStorageUser(overwritten, [&](Operation *user) {
        // The writer's own results hold the new value: their readers follow.
        Operation *reader = body.findAncestorOpInBlock(*user);
        if (reader == op)
          return false;
        if (auto it = indexOf.find(reader); it != indexOf.end())
          problem.addPredecessor(i, it->second);
        return true;
      });
  }
  // Only buffers allocated by ops and not returned are freed early.
  for (const Buffer &buffer : buffers) {
    auto result = dyn_cast_or_null<OpResult>(buffer.root);
    problem.bufferBytes.push_back(buffer.bytes);
    problem.freedAfterLastRead.push_back(
        result && !isConstant(result.getOwner()) &&
        buffer.category != MemoryCategory::Output);
  }

  std::vector<std::vector<Operation *>> orders;
  for (const std::vector<unsigned> &indices :
       planner::ordersForMemory(problem)) {
    std::vector<Operation *> &order = orders.emplace_back();
    for (unsigned i : indices)
      order.push_back(ops[i]);
  }
  return orders;
}

planner::MachineModel getPlannerDevice(const DeviceProfile &device,
                                       bool allowOffload) {
  planner::MachineModel profile;
  profile.computeSpeed = 1.0;
  profile.hostLinkBytesPerTime = allowOffload ? device.hostLinkBandwidth : 0;
  profile.copiesOverlapCompute = device.copiesOverlapCompute;
  return profile;
}

/// The element type whose peak rate an op runs at: that of its first shaped
/// result, else of its first shaped operand.
static Type getComputeElementType(Operation *op) {
  for (Type type : op->getResultTypes())
    if (auto shaped = dyn_cast<ShapedType>(type))
      return shaped.getElementType();
  for (Type type : op->getOperandTypes())
    if (auto shaped = dyn_cast<ShapedType>(type))
      return shaped.getElementType();
  return Float32Type::get(op->getContext());
}

double estimateOpSeconds(Operation *op, const DeviceProfile &device) {
  if (auto offload = dyn_cast<OffloadOp>(op))
    return estimateHostTransferSeconds(offload.getTransferBytes(), device);
  if (auto prefetch = dyn_cast<PrefetchOp>(op))
    return estimateHostTransferSeconds(prefetch.getTransferBytes(), device);
  return estimateSeconds(estimateOpCost(op), getComputeElementType(op), device);
}

/// The planner's category: what decides whether a tensor may be freed.
static planner::TensorCategory toPlannerCategory(MemoryCategory category) {
  switch (category) {
  case MemoryCategory::Parameter:
  case MemoryCategory::State:
    return planner::TensorCategory::Parameter;
  case MemoryCategory::OptimizerState:
    return planner::TensorCategory::OptimizerState;
  case MemoryCategory::Gradient:
    return planner::TensorCategory::Gradient;
  case MemoryCategory::Output:
    return planner::TensorCategory::Output;
  case MemoryCategory::Input:
    return planner::TensorCategory::Input;
  case MemoryCategory::SavedActivation:
  case MemoryCategory::Activation:
  case MemoryCategory::Workspace:
  case MemoryCategory::Communication:
    return planner::TensorCategory::Activation;
  }
  llvm_unreachable("unknown memory category");
}

IRPlanningGraph buildPlanningGraph(const MemoryAnalysis &analysis, Block &body,
                                   ArrayRef<Operation *> order,
                                   const DeviceProfile &device) {
  IRPlanningGraph result;
  planner::PlanningGraph &graph = result.graph;
  // One tensor per buffer of the memory analysis, made by the op that
  // allocates it, with its views; an in-place result is one more tensor
  // when it reuses an activation's storage.
  auto addBufferTensor = [&](Value root, std::optional<planner::OpId> producer,
                             bool recomputable) {
    const Buffer &buffer = analysis.getBuffer(root);
    planner::TensorCategory category = toPlannerCategory(buffer.category);
    // The caller owns arguments and constants are program data: the memory
    // analysis (and so the plan verifier) counts both at every point, so the
    // planner must not think it can free them.
    if (!producer)
      category = planner::TensorCategory::Parameter;
    // Arguments may stay in the caller's host memory; constants are
    // program data, placed with the program.
    auto tensorType = dyn_cast<RankedTensorType>(root.getType());
    bool offloadable = (producer || isa<BlockArgument>(root)) && tensorType &&
                       tensorType.hasStaticShape();
    planner::TensorId id =
        graph.addTensor(getValueName(root), buffer.bytes, category, producer,
                        recomputable && producer.has_value(), offloadable);
    result.values.push_back(root);
    result.categories.push_back(buffer.category);
    result.tensorOf[root] = id;
  };

  // From the body, not the schedule: a body without ops still holds its
  // arguments.
  for (BlockArgument arg : body.getArguments())
    if (isa<ShapedType>(arg.getType()))
      addBufferTensor(arg, std::nullopt, false);
  for (Operation &op : body.without_terminator())
    if (isConstant(&op))
      for (Value value : op.getResults())
        if (isa<ShapedType>(value.getType()))
          addBufferTensor(value, std::nullopt, false);

  for (Operation *op : order) {
    planner::OpId id = graph.addOp(getOpName(op), estimateOpSeconds(op, device),
                                   isBackwardOp(op));
    result.ops.push_back(op);
    // Reads first: an op never reads its own results.
    forEachOperand(op, [&](OpOperand &operand) {
      if (auto it = result.tensorOf.find(operand.get());
          it != result.tensorOf.end())
        graph.addUse(id, it->second);
    });
    // Re-running an op is the same computation only when it has no effects.
    bool recomputable = isMemoryEffectFree(op);
    for (OpResult value : op->getResults()) {
      if (!isa<ShapedType>(value.getType()))
        continue;
      Value source = getAliasedOperand(value);
      auto sourceTensor = result.tensorOf.find(source);
      if (!source || sourceTensor == result.tensorOf.end()) {
        addBufferTensor(value, id, recomputable);
        continue;
      }
      planner::TensorId t = sourceTensor->second;
      if (isViewOf(value, source)) {
        result.tensorOf[value] = t;
      } else if (!graph.tensor(t).producer) {
        // A new value in the storage of an argument or a constant (an
        // optimizer update): the same persistent tensor, overwritten.
        result.tensorOf[value] = t;
        graph.addWrite(id, t);
      } else {
        // A new value in an activation's storage (a scatter into its
        // data): a tensor of its own that the op makes by consuming that
        // one, so rerunning the op can rebuild it.
        addBufferTensor(value, id, recomputable);
        graph.setReusesStorageOf(result.tensorOf.at(value), t);
      }
    }
    if (uint64_t workspace = estimateOpCost(op).workspaceBytes) {
      graph.addTensor("workspace of " + getOpName(op), workspace,
                      planner::TensorCategory::Activation, id,
                      /*recomputable=*/true, /*offloadable=*/false);
      result.values.push_back(nullptr);
      result.categories.push_back(MemoryCategory::Workspace);
    }
  }
  // Returned values are outputs: the planner keeps them to the end.
  return result;
}

namespace {
/// Rewrites a body step by step of a plan. Each tensor (a buffer: a root
/// value, its views and its in-place results) has at each step one resident
/// instance: the value that holds it and the original value of the body it
/// stands for. A use of any other value of the buffer reads a view of the
/// instance, made on demand when the instance is not the original one.
class PlanWriter {
public:
  PlanWriter(Block &body, const IRPlanningGraph &planning)
      : planning(planning), graph(planning.graph), current(graph.numTensors()),
        hostCopy(graph.numTensors()), offloadPending(graph.numTensors(), false),
        resident(graph.numTensors(), false), onHost(graph.numTensors(), false),
        runs(graph.numOps(), 0), originalOperands(graph.numOps()),
        terminator(body.getTerminator()), builder(terminator) {
    // Recorded before ops are rewritten: a placed view reads an instance.
    for (auto [value, t] : planning.tensorOf) {
      auto result = dyn_cast<OpResult>(value);
      Value source = result ? getAliasedOperand(result) : Value();
      if (source && isViewOf(result, source))
        for (OpOperand &operand : result.getOwner()->getOpOperands())
          if (operand.get() == source)
            viewSources[value] = {source, operand.getOperandNumber()};
    }
    for (planner::TensorId t = 0; t < graph.numTensors(); ++t)
      if (!graph.tensor(t).producer) {
        current[t] = {planning.values[t], planning.values[t]};
        resident[t] = true;
      }
  }

  AppliedPlanStats run(const planner::Plan &plan) {
    for (const planner::PlanStep &step : plan.steps)
      apply(step);
    // A host copy nothing freed: made before the end.
    for (planner::TensorId t = 0; t < graph.numTensors(); ++t)
      if (offloadPending[t])
        offload(t);
    // What the caller keeps in host memory is returned from there.
    SmallVector<Value> returned = getOperands(terminator);
    redirectUses(terminator, returned);
    for (auto [operand, original] :
         llvm::zip(terminator->getOpOperands(), returned))
      if (auto it = planning.tensorOf.find(original);
          it != planning.tensorOf.end() && onHost[it->second])
        operand.set(hostCopy[it->second].value);
    auto func = cast<FunctionOpInterface>(terminator->getParentOp());
    func.setType(FunctionType::get(func.getContext(),
                                   terminator->getBlock()->getArgumentTypes(),
                                   terminator->getOperandTypes()));
    return stats;
  }

private:
  struct Instance {
    Value value, original;
  };

  void apply(const planner::PlanStep &step) {
    switch (step.kind) {
    case planner::StepKind::Compute:
      started = true;
      compute(step.id);
      return;
    case planner::StepKind::Offload:
      // The copy is placed where the device memory is released (the Free
      // that follows): the program point where the IR's value dies. Its
      // data does not change in between, so the runtime may start it at
      // the step the plan issues it.
      offloadPending[step.id] = true;
      return;
    case planner::StepKind::Prefetch: {
      Instance host = hostCopy[step.id];
      auto type = cast<HostTensorType>(host.value.getType()).getTensorType();
      current[step.id] = {
          PrefetchOp::create(builder, host.value.getLoc(), type, host.value),
          host.original};
      resident[step.id] = true;
      return;
    }
    case planner::StepKind::Free:
      // Liveness ends at the last use; the IR needs no free.
      if (offloadPending[step.id])
        offload(step.id);
      resident[step.id] = false;
      // Freed before anything runs: an argument the caller passes in host
      // memory, brought in by prefetches.
      if (!started && !graph.tensor(step.id).producer) {
        auto arg = cast<BlockArgument>(planning.values[step.id]);
        arg.setType(HostTensorType::get(arg.getContext(),
                                        cast<RankedTensorType>(arg.getType())));
        hostCopy[step.id] = {arg, arg};
        current[step.id] = {};
        onHost[step.id] = true;
      }
      return;
    }
  }

  void offload(planner::TensorId t) {
    Instance device = current[t];
    auto type = cast<RankedTensorType>(device.value.getType());
    hostCopy[t] = {
        OffloadOp::create(builder, device.value.getLoc(),
                          HostTensorType::get(type.getContext(), type),
                          device.value),
        device.original};
    offloadPending[t] = false;
    ++stats.offloads;
    stats.offloadedBytes += graph.tensor(t).bytes;
  }

  void compute(planner::OpId id) {
    Operation *op = planning.ops[id];
    Operation *instance = op;
    bool rerun = runs[id]++ > 0;
    if (!rerun) {
      originalOperands[id] = getOperands(op);
      op->moveBefore(terminator);
    } else {
      instance = builder.clone(*op);
      instance->setAttr(VramDialect::kRecomputeAttrName, builder.getUnitAttr());
      ++stats.recomputedOps;
    }
    redirectUses(instance, originalOperands[id]);
    const planner::PlanOp &planned = graph.op(id);
    for (auto [original, placed] :
         llvm::zip(op->getResults(), instance->getResults())) {
      auto it = planning.tensorOf.find(original);
      if (it == planning.tensorOf.end())
        continue;
      planner::TensorId t = it->second;
      if (llvm::is_contained(planned.outputs, t)) {
        // A rerun of a multi-output op also makes outputs that are still
        // resident; the planner drops those copies, so uses stay put.
        if (rerun && resident[t])
          continue;
        current[t] = {placed, original};
        resident[t] = true;
        // The op made it in that input's instance, which is gone.
        if (std::optional<planner::TensorId> input =
                graph.tensor(t).reusesStorageOf)
          resident[*input] = false;
      } else if (llvm::is_contained(planned.writes, t)) {
        current[t] = {placed, original};
      } else {
        // A view: the instance it was made from now has it.
        views[{current[t].value, original}] = placed;
      }
    }
  }

  /// The value holding `original`, a value of tensor `t`, at this point.
  Value materialize(Value original, planner::TensorId t) {
    Instance instance = current[t];
    if (original == instance.original)
      return instance.value;
    if (auto it = views.find({instance.value, original}); it != views.end())
      return it->second;
    // Only views of the instance's original are read after it: readers of
    // older values of the buffer come before an in-place write.
    // Anything else is a planner bug that the plan's verification then
    // reports as a use the IR does not dominate.
    auto it = viewSources.find(original);
    if (it == viewSources.end())
      return original;
    auto [source, operandNumber] = it->second;
    Value base = materialize(source, t);
    auto result = cast<OpResult>(original);
    Operation *view = builder.clone(*result.getOwner());
    view->setAttr(VramDialect::kRecomputeAttrName, builder.getUnitAttr());
    view->setOperand(operandNumber, base);
    Value made = view->getResult(result.getResultNumber());
    views[{instance.value, original}] = made;
    return made;
  }

  /// The values `op` and the ops nested in it read, in walk order.
  static SmallVector<Value> getOperands(Operation *op) {
    SmallVector<Value> operands;
    forEachOperand(
        op, [&](OpOperand &operand) { operands.push_back(operand.get()); });
    return operands;
  }

  /// Points the operands of `op`, which read `originals` in the body as it
  /// was, at the instances resident now; views they need are made right
  /// before `op`.
  void redirectUses(Operation *op, ArrayRef<Value> originals) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(op);
    unsigned index = 0;
    forEachOperand(op, [&](OpOperand &operand) {
      Value original = originals[index++];
      auto it = planning.tensorOf.find(original);
      if (it == planning.tensorOf.end() || !current[it->second].value)
        return;
      Value value = materialize(original, it->second);
      if (value != operand.get())
        operand.set(value);
    });
  }

  const IRPlanningGraph &planning;
  const planner::PlanningGraph &graph;
  std::vector<Instance> current, hostCopy;
  std::vector<bool> offloadPending, resident;
  /// Arguments the caller passes in host memory.
  std::vector<bool> onHost;
  /// Whether an op has been placed.
  bool started = false;
  /// Each view of the body: the value it views and that operand's number.
  llvm::DenseMap<Value, std::pair<Value, unsigned>> viewSources;
  /// (instance value, original view) -> the view of that instance.
  llvm::DenseMap<std::pair<Value, Value>, Value> views;
  std::vector<unsigned> runs;
  /// By op: what it read before the plan moved it.
  std::vector<SmallVector<Value>> originalOperands;
  Operation *terminator;
  OpBuilder builder;
  AppliedPlanStats stats;
};
} // namespace

AppliedPlanStats applyPlan(Block &body, const IRPlanningGraph &planning,
                           const planner::Plan &plan) {
  // Constants have no operands: they go first, in their order, so every
  // op placed after them may read them.
  SmallVector<Operation *> constants;
  for (Operation &op : body.without_terminator())
    if (isConstant(&op))
      constants.push_back(&op);
  for (Operation *constant : llvm::reverse(constants))
    constant->moveBefore(&body.front());
  return PlanWriter(body, planning).run(plan);
}

std::string formatBudget(uint64_t bytes) {
  return formatExactBytes(bytes) + " bytes (" + formatBinaryBytes(bytes) + ")";
}

/// The plan of `plannerName` for `graph`, or why there is none, with the
/// smallest budget that planner meets: the fast planner's search for itself
/// and for the MILP (recompute only, so searched without the host link),
/// the one plan's peak for planners that do not aim at a budget (sqrt,
/// none). Only the fast planners offload, so only their floor counts on it.
static llvm::Expected<planner::Plan>
runPlanner(StringRef plannerName, const planner::PlanningGraph &graph,
           uint64_t budget, const planner::MachineModel &device) {
  if (plannerName == "fast" || plannerName == "fast-replay")
    return planner::planFast(graph, budget, device,
                             /*dropsAhead=*/plannerName == "fast");
  planner::MachineModel recomputeOnly = device.withoutHostLink();
  auto tooSmall = [&](uint64_t smallest) {
    return llvm::make_error<planner::BudgetTooSmallError>(
        budget, planner::memoryFloor(graph, /*canOffload=*/false), smallest);
  };
  if (plannerName == "milp") {
    // Started from the fast planner's recompute-only plan, the MILP is
    // never dearer than it and has a plan from its first moment.
    planner::MilpOptions options;
    llvm::Expected<planner::Plan> start =
        planner::planFast(graph, budget, recomputeOnly);
    if (start)
      options.startRuns = start->opOrder();
    else
      llvm::consumeError(start.takeError());
    llvm::Expected<planner::MilpResult> result =
        planner::planMilp(graph, budget, device, options);
    if (!result)
      return result.takeError();
    if (result->plan)
      return std::move(*result->plan);
    if (result->status == planner::MilpStatus::Infeasible)
      return tooSmall(planner::smallestFastBudget(graph, recomputeOnly));
    return llvm::createStringError(
        "the MILP planner found no plan within its time limit (%.0f s); try "
        "planner=fast",
        planner::MilpOptions().timeLimitSeconds);
  }
  llvm::Expected<planner::Plan> plan =
      plannerName == "sqrt" ? planner::planChenSqrtN(graph, device)
                            : planner::planKeepAll(graph, device);
  if (plan && plan->simulation.peakBytes > budget)
    return tooSmall(plan->simulation.peakBytes);
  return plan;
}

/// What makes up a floor: "1,764 B of arguments kept on the device +
/// 1,233,125,380 B while 'w/update' runs".
static std::string describeFloorParts(const planner::PlanningGraph &graph,
                                      const planner::MemoryFloor &floor) {
  std::string where = floor.op ? "while '" + graph.op(*floor.op).name + "' runs"
                               : std::string("of inputs before the first op");
  return formatExactBytes(floor.residentArguments) +
         " B of arguments kept on the device + " +
         formatExactBytes(floor.footprint) + " B " + where;
}

/// Whether plan `a` beats plan `b`: less time, then a lower peak. Times
/// within a part in 10^9 are equal: the same ops summed in another order
/// differ in the last bits, and a reordered schedule with no recomputation
/// won over the program order on that rounding alone, at a higher peak.
static bool isBetter(const planner::Plan &a, const planner::Plan &b) {
  double timeA = a.simulation.totalTime, timeB = b.simulation.totalTime;
  if (std::abs(timeA - timeB) > 1e-9 * std::max(timeA, timeB))
    return timeA < timeB;
  return a.simulation.peakBytes < b.simulation.peakBytes;
}

llvm::Error checkPlannerName(StringRef name) {
  if (llvm::is_contained({"fast", "fast-replay", "milp", "sqrt", "none"}, name))
    return llvm::Error::success();
  return llvm::createStringError("unknown planner '" + name +
                                 "' (fast, fast-replay, milp, sqrt or none)");
}

char UnmetBudgetError::ID = 0;

void UnmetBudgetError::log(raw_ostream &os) const {
  os << "budget of " << formatBudget(budget)
     << " cannot be met: the smallest budget that can be met is "
     << formatBudget(smallestBudget) << "; no plan can go below "
     << formatBudget(floorBytes) << " (" << floorParts << ")";
}

std::error_code UnmetBudgetError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

llvm::Expected<FunctionPlan>
planFunctionBody(const MemoryAnalysis &analysis, Block &body,
                 const DeviceProfile &device,
                 const FunctionPlanOptions &options) {
  if (llvm::Error error = checkPlannerName(options.planner))
    return std::move(error);
  StringRef plannerName = options.planner;
  std::vector<std::vector<Operation *>> orders = {getPlannedOps(body)};
  if (options.allowReorder)
    for (std::vector<Operation *> &order : schedulesForMemory(body, analysis))
      if (!llvm::is_contained(orders, order))
        orders.push_back(std::move(order));

  planner::MachineModel plannerDevice =
      getPlannerDevice(device, options.allowOffload);
  std::optional<FunctionPlan> best;
  std::optional<std::string> firstError;
  std::optional<uint64_t> smallestBudget, floorBytes;
  std::string floorParts;
  for (const std::vector<Operation *> &order : orders) {
    IRPlanningGraph planning =
        buildPlanningGraph(analysis, body, order, device);
    // The planners assume a well-formed graph: an IR the graph cannot
    // describe is an error, not a plan.
    if (llvm::Error error = planning.graph.verify())
      return llvm::createStringError("cannot plan this program: " +
                                     llvm::toString(std::move(error)));
    llvm::Expected<planner::Plan> plan =
        runPlanner(plannerName, planning.graph, options.budget, plannerDevice);
    if (!plan) {
      llvm::Error rest = llvm::handleErrors(
          plan.takeError(), [&](const planner::BudgetTooSmallError &error) {
            smallestBudget = std::min(smallestBudget.value_or(UINT64_MAX),
                                      error.smallestFeasible);
            if (floorBytes && *floorBytes <= error.floor.bytes())
              return;
            floorBytes = error.floor.bytes();
            floorParts = describeFloorParts(planning.graph, error.floor);
          });
      if (rest && !firstError)
        firstError = llvm::toString(std::move(rest));
      else
        llvm::consumeError(std::move(rest));
      continue;
    }
    if (!best || isBetter(*plan, best->plan))
      best = FunctionPlan{std::move(planning), std::move(*plan)};
  }
  if (!best) {
    if (smallestBudget)
      return llvm::make_error<UnmetBudgetError>(options.budget, *smallestBudget,
                                                *floorBytes, floorParts);
    return llvm::createStringError("planning failed: " + *firstError);
  }
  double overhead = best->plan.simulation.overhead();
  if (options.maxOverhead >= 0 && overhead > options.maxOverhead)
    return llvm::createStringError(
        llvm::formatv("the plan for a budget of {0} adds {1:P1} to the "
                      "compute time, more than max-overhead {2:P1}",
                      formatBudget(options.budget), overhead,
                      options.maxOverhead)
            .str());
  return std::move(*best);
}

} // namespace vram
