//===- Plan.h - A memory plan as a program of steps, and its simulator ----===//
//
// Every planner emits the same thing: a straight-line program of compute,
// offload, prefetch and free steps. The simulator replays that program on its
// own (it shares no state with any planner), rejects invalid programs and
// measures live bytes at every step, the peak and the time overhead. A Plan
// bundles the program with that measurement and a per-tensor summary.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNER_PLAN_H
#define VRAM_PLANNER_PLAN_H

#include "vram/Planner/PlanningGraph.h"

namespace vram::planner {

enum class StepKind {
  /// Runs an op; running an op a second time is a recomputation.
  Compute,
  /// Starts copying a resident tensor to host memory.
  Offload,
  /// Allocates a tensor on the device and starts copying it back from host.
  Prefetch,
  /// Releases a tensor's device memory; waits for a pending offload of it.
  /// Before the first Compute, a Free of a persistent tensor says the caller
  /// keeps it in host memory: it starts with a host copy, and the program
  /// must leave a host copy of its final value.
  Free,
};

struct PlanStep {
  StepKind kind;
  /// An OpId for Compute, a TensorId otherwise.
  unsigned id;

  static PlanStep compute(OpId op) { return {StepKind::Compute, op}; }
  static PlanStep offload(TensorId t) { return {StepKind::Offload, t}; }
  static PlanStep prefetch(TensorId t) { return {StepKind::Prefetch, t}; }
  static PlanStep free(TensorId t) { return {StepKind::Free, t}; }
  bool operator==(const PlanStep &other) const {
    return kind == other.kind && id == other.id;
  }
};

struct SimulationResult {
  /// Device bytes live while each step runs (during a Compute: its inputs,
  /// everything else resident and its freshly allocated outputs).
  std::vector<uint64_t> liveBytes;
  uint64_t peakBytes = 0;
  size_t peakStep = 0;
  /// Time of every op run once.
  double baselineTime = 0;
  /// Time of the second and later runs of ops.
  double recomputeTime = 0;
  /// Time compute waited for copies.
  double exposedTransferTime = 0;
  double totalTime = 0;

  /// Extra time as a fraction of the unplanned compute time.
  double overhead() const {
    return baselineTime > 0
               ? (recomputeTime + exposedTransferTime) / baselineTime
               : 0;
  }
};

/// Replays `steps` and fails with a description of the first invalid step:
/// an op whose input is not resident, a free of a tensor that is not resident,
/// a prefetch with no host copy, an op never run, a recomputed tensor that is
/// not recomputable, or an output missing at the end.
llvm::Expected<SimulationResult> simulate(const PlanningGraph &graph,
                                          llvm::ArrayRef<PlanStep> steps,
                                          const MachineModel &device);

/// What a planner weighed when it evicted a tensor, in the graph's time
/// unit; infinity for an option it did not have.
struct EvictionCost {
  /// Rerunning the producer and the missing ancestors that needs.
  double recompute = 0;
  /// Compute time the host round trip would stall: the part of the copy out
  /// not done yet plus the part of the copy back that the compute before the
  /// next use cannot hide.
  double exposedCopy = 0;
  /// Compute time between the eviction and the next use: what hides the
  /// copy back.
  double untilNextUse = 0;
};

/// How one tensor is treated by a plan; indices point into Plan::steps.
struct TensorDecision {
  llvm::SmallVector<size_t, 1> recomputeSteps;
  llvm::SmallVector<size_t, 1> offloadSteps;
  llvm::SmallVector<size_t, 1> prefetchSteps;
  /// Why the tensor left the device, as the fast planner weighed it at the
  /// first eviction; empty for the other planners and for kept tensors.
  std::optional<EvictionCost> eviction;
  /// A persistent tensor the caller keeps in host memory.
  bool inHostMemory = false;

  bool isKept() const {
    return recomputeSteps.empty() && offloadSteps.empty() &&
           prefetchSteps.empty() && !inHostMemory;
  }
  bool isRecomputed() const { return !recomputeSteps.empty(); }
  bool isOffloaded() const { return !offloadSteps.empty(); }
};

struct Plan {
  std::vector<PlanStep> steps;
  /// Indexed by TensorId.
  std::vector<TensorDecision> decisions;
  SimulationResult simulation;

  /// The op order, recomputations included.
  std::vector<OpId> opOrder() const;
};

/// The ops `steps` runs, in order, recomputations included.
std::vector<OpId> getOpRuns(llvm::ArrayRef<PlanStep> steps);

/// The live bytes of `simulation` (a simulation of `steps`) while each
/// Compute step runs, in program order.
std::vector<int64_t> getComputeLiveBytes(llvm::ArrayRef<PlanStep> steps,
                                         const SimulationResult &simulation);

/// Simulates `steps` and summarises each tensor's treatment.
llvm::Expected<Plan> buildPlan(const PlanningGraph &graph,
                               std::vector<PlanStep> steps,
                               const MachineModel &device);

/// Moves every Free of a tensor instance with no host copy in flight to
/// right after the last step that reads or makes that instance. A program
/// that keeps an instance beyond its last use (a replay holding it for a
/// rebuild that did not come) then takes the memory its IR takes, where a
/// value dies at its last use. The Free of an instance being offloaded stays
/// where it is: it marks when the device memory is released.
std::vector<PlanStep> freeAfterLastUse(const PlanningGraph &graph,
                                       llvm::ArrayRef<PlanStep> steps);

/// Turns a sequence of op runs into a program that frees every tensor
/// instance right after its last read, which is the least memory that
/// sequence can take. A run of an op creates new instances of its outputs.
std::vector<PlanStep> insertFrees(const PlanningGraph &graph,
                                  llvm::ArrayRef<OpId> opRuns);

} // namespace vram::planner

#endif // VRAM_PLANNER_PLAN_H
