//===- Plan.cpp - Plan simulator, per-tensor summary and free insertion ---===//

#include "vram/Planner/Plan.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace vram::planner;

namespace {
/// Replays a step program. Compute runs in order on one stream; offloads and
/// prefetches each have their own copy engine (a host link is full duplex)
/// and run in issue order. Compute waits for a prefetch before reading its
/// tensor, and a Free waits for a pending offload of the tensor it frees.
class Simulator {
public:
  Simulator(const PlanningGraph &graph, const MachineModel &device)
      : graph(graph), device(device), resident(graph.numTensors()),
        hostCopyReady(graph.numTensors(), -1),
        offloadDone(graph.numTensors(), -1), arrival(graph.numTensors(), 0),
        lastWriter(graph.numTensors()), onHost(graph.numTensors()),
        computed(graph.numOps()) {
    for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
      if (tensor.producer)
        continue;
      resident[t] = true;
      live += tensor.bytes;
    }
  }

  llvm::Expected<SimulationResult> run(llvm::ArrayRef<PlanStep> steps) {
    result.liveBytes.reserve(steps.size());
    for (auto [index, step] : llvm::enumerate(steps)) {
      if (llvm::Error err = execute(step))
        return llvm::createStringError(
            llvm::formatv("invalid plan at step {0}: {1}", index,
                          llvm::toString(std::move(err))));
      // Frees before the first op say which arguments are in host memory:
      // the program starts without them.
      bool setup = !started && step.kind == StepKind::Free;
      if (!setup && result.liveBytes.back() > result.peakBytes) {
        result.peakBytes = result.liveBytes.back();
        result.peakStep = index;
      }
    }
    // A graph without ops holds what it starts with on the device throughout.
    if (!started)
      result.peakBytes = live;
    for (auto [op, done] : llvm::enumerate(computed))
      if (!done)
        return fail("op '{0}' never runs", graph.op(op).name);
    for (auto [t, tensor] : llvm::enumerate(graph.tensors())) {
      if (tensor.category == TensorCategory::Output && !resident[t])
        return fail("output '{0}' is not resident at the end", tensor.name);
      if (onHost[t] && hostCopyReady[t] < 0)
        return fail("the final value of '{0}' is not back in host memory",
                    tensor.name);
    }
    result.totalTime = clock;
    return result;
  }

private:
  template <typename... Ts>
  static llvm::Error fail(const char *fmt, Ts &&...vals) {
    return llvm::createStringError(
        llvm::formatv(fmt, std::forward<Ts>(vals)...).str());
  }

  bool validTensor(unsigned id) const { return id < graph.numTensors(); }

  /// Compute waits until `time`; the wait is exposed transfer time.
  void waitUntil(double time) {
    if (time <= clock)
      return;
    result.exposedTransferTime += time - clock;
    clock = time;
  }

  /// Issues a copy on an engine and returns its completion time. Without
  /// overlap, compute is blocked for the whole copy.
  double startCopy(double &engineFree, double ready, uint64_t bytes) {
    double start = std::max({clock, engineFree, ready});
    double done = start + device.copyTime(bytes);
    engineFree = done;
    if (!device.copiesOverlapCompute)
      waitUntil(done);
    return done;
  }

  llvm::Error execute(PlanStep step) {
    switch (step.kind) {
    case StepKind::Compute:
      return executeCompute(step.id);
    case StepKind::Offload: {
      if (!validTensor(step.id))
        return fail("offload of unknown tensor {0}", step.id);
      const PlanTensor &tensor = graph.tensor(step.id);
      if (!resident[step.id])
        return fail("offload of '{0}', which is not resident", tensor.name);
      if (!tensor.offloadable || !device.canOffload())
        return fail("'{0}' cannot be offloaded", tensor.name);
      double done = startCopy(d2hFree, arrival[step.id], tensor.bytes);
      offloadDone[step.id] = done;
      if (hostCopyReady[step.id] < 0)
        hostCopyReady[step.id] = done;
      result.liveBytes.push_back(live);
      return llvm::Error::success();
    }
    case StepKind::Prefetch: {
      if (!validTensor(step.id))
        return fail("prefetch of unknown tensor {0}", step.id);
      const PlanTensor &tensor = graph.tensor(step.id);
      if (resident[step.id])
        return fail("prefetch of '{0}', which is resident", tensor.name);
      if (hostCopyReady[step.id] < 0)
        return fail("prefetch of '{0}', which has no host copy", tensor.name);
      resident[step.id] = true;
      live += tensor.bytes;
      arrival[step.id] =
          startCopy(h2dFree, hostCopyReady[step.id], tensor.bytes);
      result.liveBytes.push_back(live);
      return llvm::Error::success();
    }
    case StepKind::Free: {
      if (!validTensor(step.id))
        return fail("free of unknown tensor {0}", step.id);
      const PlanTensor &tensor = graph.tensor(step.id);
      if (!resident[step.id])
        return fail("free of '{0}', which is not resident", tensor.name);
      if (graph.mustStayResident(step.id) && !onHost[step.id]) {
        // A persistent tensor freed before anything runs is one the caller
        // keeps in host memory: it has a host copy from the start and must
        // have one of its final value at the end.
        if (started || !graph.isPersistent(step.id) || !tensor.offloadable ||
            !device.canOffload())
          return fail("free of '{0}', which must stay resident", tensor.name);
        onHost[step.id] = true;
        hostCopyReady[step.id] = 0;
      }
      // The buffer can only be reused once the copy to host has read it.
      waitUntil(offloadDone[step.id]);
      offloadDone[step.id] = -1;
      resident[step.id] = false;
      live -= tensor.bytes;
      result.liveBytes.push_back(live);
      return llvm::Error::success();
    }
    }
    llvm_unreachable("unknown step kind");
  }

  llvm::Error executeCompute(OpId id) {
    if (id >= graph.numOps())
      return fail("run of unknown op {0}", id);
    const PlanOp &op = graph.op(id);
    started = true;
    for (TensorId input : op.inputs) {
      if (!resident[input])
        return fail("op '{0}' reads '{1}', which is not resident", op.name,
                    graph.tensor(input).name);
      waitUntil(arrival[input]);
    }
    double time = device.computeTime(op.cost);
    if (computed[id]) {
      for (TensorId output : op.outputs)
        if (!graph.canRecompute(output))
          return fail("op '{0}' reruns but '{1}' is not recomputable", op.name,
                      graph.tensor(output).name);
      if (!op.writes.empty())
        return fail("op '{0}' reruns but writes '{1}' in place", op.name,
                    graph.tensor(op.writes.front()).name);
      for (TensorId input : op.inputs)
        if (lastWriter[input] && *lastWriter[input] > id)
          return fail("op '{0}' reruns after '{1}' overwrote its input '{2}'",
                      op.name, graph.op(*lastWriter[input]).name,
                      graph.tensor(input).name);
      result.recomputeTime += time;
    } else {
      result.baselineTime += time;
    }
    computed[id] = true;
    // An output made in an input's storage waits for a copy still reading
    // it.
    for (TensorId output : op.outputs)
      if (std::optional<TensorId> input = graph.tensor(output).reusesStorageOf)
        waitUntil(offloadDone[*input]);
    // An in-place write waits for a copy still reading the old value, and
    // makes host copies of it stale.
    for (TensorId written : op.writes) {
      waitUntil(offloadDone[written]);
      offloadDone[written] = -1;
      hostCopyReady[written] = -1;
      lastWriter[written] = id;
    }
    clock += time;

    // Every output gets a fresh buffer while the op runs, unless it takes
    // over an input's storage (that instance is gone afterwards); the copy
    // of an output that was already resident is dropped right after.
    uint64_t duplicateBytes = 0;
    for (TensorId output : op.outputs) {
      const PlanTensor &tensor = graph.tensor(output);
      if (tensor.reusesStorageOf) {
        resident[*tensor.reusesStorageOf] = false;
        live -= tensor.bytes;
      }
      live += tensor.bytes;
      if (resident[output])
        duplicateBytes += tensor.bytes;
      resident[output] = true;
      arrival[output] = 0;
    }
    result.liveBytes.push_back(live);
    live -= duplicateBytes;
    return llvm::Error::success();
  }

  const PlanningGraph &graph;
  const MachineModel &device;
  std::vector<bool> resident;
  /// When the first host copy of each tensor completes; -1 if none.
  std::vector<double> hostCopyReady;
  /// When the offload of the resident instance completes; -1 if none.
  std::vector<double> offloadDone;
  /// When a prefetched tensor is on the device.
  std::vector<double> arrival;
  /// The op that last overwrote each tensor in place.
  std::vector<std::optional<OpId>> lastWriter;
  /// Persistent tensors the caller keeps in host memory.
  std::vector<bool> onHost;
  std::vector<bool> computed;
  /// Whether an op has run: a persistent tensor freed before is on host.
  bool started = false;
  uint64_t live = 0;
  double clock = 0, d2hFree = 0, h2dFree = 0;
  SimulationResult result;
};
} // namespace

llvm::Expected<SimulationResult>
vram::planner::simulate(const PlanningGraph &graph,
                        llvm::ArrayRef<PlanStep> steps,
                        const MachineModel &device) {
  return Simulator(graph, device).run(steps);
}

std::vector<OpId> vram::planner::getOpRuns(llvm::ArrayRef<PlanStep> steps) {
  std::vector<OpId> runs;
  for (const PlanStep &step : steps)
    if (step.kind == StepKind::Compute)
      runs.push_back(step.id);
  return runs;
}

std::vector<OpId> Plan::opOrder() const { return getOpRuns(steps); }

std::vector<int64_t>
vram::planner::getComputeLiveBytes(llvm::ArrayRef<PlanStep> steps,
                                   const SimulationResult &simulation) {
  std::vector<int64_t> live;
  for (auto [step, bytes] : llvm::zip(steps, simulation.liveBytes))
    if (step.kind == StepKind::Compute)
      live.push_back(int64_t(bytes));
  return live;
}

llvm::Expected<Plan> vram::planner::buildPlan(const PlanningGraph &graph,
                                              std::vector<PlanStep> steps,
                                              const MachineModel &device) {
  llvm::Expected<SimulationResult> simulation = simulate(graph, steps, device);
  if (!simulation)
    return simulation.takeError();
  Plan plan;
  plan.simulation = std::move(*simulation);
  plan.decisions.resize(graph.numTensors());
  std::vector<bool> computed(graph.numOps());
  bool started = false;
  for (auto [index, step] : llvm::enumerate(steps)) {
    switch (step.kind) {
    case StepKind::Compute:
      if (computed[step.id])
        for (TensorId output : graph.op(step.id).outputs)
          plan.decisions[output].recomputeSteps.push_back(index);
      computed[step.id] = true;
      started = true;
      break;
    case StepKind::Offload:
      plan.decisions[step.id].offloadSteps.push_back(index);
      break;
    case StepKind::Prefetch:
      plan.decisions[step.id].prefetchSteps.push_back(index);
      break;
    case StepKind::Free:
      if (!started && graph.isPersistent(step.id))
        plan.decisions[step.id].inHostMemory = true;
      break;
    }
  }
  plan.steps = std::move(steps);
  return plan;
}

std::vector<PlanStep> vram::planner::insertFrees(const PlanningGraph &graph,
                                                 llvm::ArrayRef<OpId> opRuns) {
  // freesBefore[p] holds the tensors freed between run p-1 and run p;
  // lastRead is the run that last read (or created) the live instance, -1
  // for tensors that exist before the first run.
  std::vector<llvm::SmallVector<TensorId, 2>> freesBefore(opRuns.size() + 1);
  std::vector<int64_t> lastRead(graph.numTensors(), -1);
  std::vector<bool> live(graph.numTensors());
  for (auto [t, tensor] : llvm::enumerate(graph.tensors()))
    live[t] = !tensor.producer;
  auto release = [&](TensorId t) {
    if (!graph.mustStayResident(t))
      freesBefore[lastRead[t] + 1].push_back(t);
  };

  for (auto [run, op] : llvm::enumerate(opRuns)) {
    for (TensorId input : graph.op(op).inputs)
      lastRead[input] = run;
    for (TensorId output : graph.op(op).outputs) {
      if (live[output])
        release(output);
      live[output] = true;
      lastRead[output] = run;
      // The run consumes that instance: nothing to free.
      if (std::optional<TensorId> input = graph.tensor(output).reusesStorageOf)
        live[*input] = false;
    }
  }
  for (TensorId t = 0; t < graph.numTensors(); ++t)
    if (live[t])
      release(t);

  std::vector<PlanStep> steps;
  auto emitFrees = [&](size_t slot) {
    for (TensorId t : freesBefore[slot])
      steps.push_back(PlanStep::free(t));
  };
  emitFrees(0);
  for (auto [run, op] : llvm::enumerate(opRuns)) {
    steps.push_back(PlanStep::compute(op));
    emitFrees(run + 1);
  }
  return steps;
}

std::vector<PlanStep>
vram::planner::freeAfterLastUse(const PlanningGraph &graph,
                                llvm::ArrayRef<PlanStep> steps) {
  // By tensor: the step that last read or made the resident instance (-1:
  // it exists before the first step) and whether a copy of it went out.
  std::vector<int64_t> lastTouch(graph.numTensors(), -1);
  std::vector<bool> offloading(graph.numTensors(), false);
  // movedAfter[i + 1]: the frees that go right after step i.
  std::vector<llvm::SmallVector<TensorId, 1>> movedAfter(steps.size() + 1);
  std::vector<bool> moved(steps.size(), false);
  for (auto [index, step] : llvm::enumerate(steps)) {
    switch (step.kind) {
    case StepKind::Compute: {
      const PlanOp &op = graph.op(step.id);
      for (TensorId t : llvm::concat<const TensorId>(op.inputs, op.outputs))
        lastTouch[t] = index;
      break;
    }
    case StepKind::Offload:
      offloading[step.id] = true;
      break;
    case StepKind::Prefetch:
      lastTouch[step.id] = index;
      offloading[step.id] = false;
      break;
    case StepKind::Free:
      if (!offloading[step.id]) {
        moved[index] = true;
        movedAfter[lastTouch[step.id] + 1].push_back(step.id);
      }
      offloading[step.id] = false;
      break;
    }
  }
  std::vector<PlanStep> program;
  program.reserve(steps.size());
  for (TensorId t : movedAfter[0])
    program.push_back(PlanStep::free(t));
  for (auto [index, step] : llvm::enumerate(steps)) {
    if (!moved[index])
      program.push_back(step);
    for (TensorId t : movedAfter[index + 1])
      program.push_back(PlanStep::free(t));
  }
  return program;
}
