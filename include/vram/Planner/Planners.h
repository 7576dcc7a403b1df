//===- Planners.h - Baselines, the fast planner and the exact MILP --------===//
//
// All planners keep the graph's schedule and decide, for every tensor,
// whether it stays resident, is recomputed before a later use, or is
// offloaded to host memory and prefetched back. docs/planner.md explains the
// algorithms and compares them.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNER_PLANNERS_H
#define VRAM_PLANNER_PLANNERS_H

#include "vram/Planner/Plan.h"

namespace vram::planner {

/// The floor no plan goes below, and what makes it up.
struct MemoryFloor {
  /// Persistent tensors that stay on the device throughout the step.
  uint64_t residentArguments = 0;
  /// The op whose footprint sets the floor; none when the tensors present
  /// before the first op do.
  std::optional<OpId> op;
  /// What is on the device while that op runs besides residentArguments:
  /// its inputs and outputs (workspace included), the arguments it reads
  /// from host memory, and the graph outputs made before it.
  uint64_t footprint = 0;

  uint64_t bytes() const { return residentArguments + footprint; }
};

/// Raised when no plan meets the budget. Carries the smallest budget the
/// fast planner could meet, so callers can tell the user what would work.
class BudgetTooSmallError : public llvm::ErrorInfo<BudgetTooSmallError> {
public:
  static char ID;
  BudgetTooSmallError(uint64_t budget, MemoryFloor floor,
                      uint64_t smallestFeasible)
      : budget(budget), floor(floor), smallestFeasible(smallestFeasible) {}

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

  uint64_t budget;
  /// No plan of any planner can go below this (see memoryFloor).
  MemoryFloor floor;
  /// The smallest budget the fast planner meets.
  uint64_t smallestFeasible;
};

/// Keeps every tensor until its last use. Keeping every forward output
/// ("checkpoint all") is the same plan in a fixed schedule.
llvm::Expected<Plan> planKeepAll(const PlanningGraph &graph,
                                 const MachineModel &device);

/// Chen et al. 2016: keeps the outputs of every ceil(sqrt(n))-th forward op,
/// frees the other forward outputs after their last forward use and
/// recomputes each segment once when the backward pass first needs it.
llvm::Expected<Plan> planChenSqrtN(const PlanningGraph &graph,
                                   const MachineModel &device);

/// The fast planner: replays the schedule and, whenever the budget would be
/// exceeded, evicts the resident tensor whose eviction costs the least time
/// per byte and per unit of time it stays away, by dropping it (recomputed on
/// demand) or by offloading it (prefetched just in time), whichever is
/// cheaper. Unless `dropsAhead` is off, it also replays with recompute
/// decisions chosen ahead over the whole schedule and keeps the cheaper plan.
/// Reruns of a recompute-only plan that the budget does not need are taken
/// out before plans are compared. Fails with BudgetTooSmallError when it
/// cannot meet `budget`.
llvm::Expected<Plan> planFast(const PlanningGraph &graph, uint64_t budget,
                              const MachineModel &device,
                              bool dropsAhead = true);

/// Persistent bytes plus the largest bytesTouchedBy over all ops, with the
/// graph outputs made before the op: no plan peaks lower. `withHostMemory`:
/// persistent tensors that can be offloaded may live in host memory, so
/// they count only in the ops that read them.
MemoryFloor memoryFloor(const PlanningGraph &graph,
                        bool withHostMemory = false);
inline uint64_t memoryLowerBound(const PlanningGraph &graph,
                                 bool withHostMemory = false) {
  return memoryFloor(graph, withHostMemory).bytes();
}

/// A budget that some recompute-only plan keeping the schedule meets: the
/// plan in which every op's first run rebuilds its inputs from nothing,
/// depth first, and only the arguments and the graph outputs made so far
/// stay (RebuildCeiling.cpp). It reruns exponentially many ops, so it shows
/// that a plan exists, not what it costs. None for a graph where that plan
/// is not valid: a tensor in another's storage, or one that cannot be
/// recomputed and need not stay.
std::optional<uint64_t> recomputeOnlyCeiling(const PlanningGraph &graph);

/// Peak of the unplanned schedule.
uint64_t unplannedPeak(const PlanningGraph &graph);

/// The smallest budget the fast planner meets: the lowest peak it reaches
/// in a bisection (to 0.1%) between memoryLowerBound and a budget that holds
/// every tensor, with every persistent tensor it may keep in host memory
/// there.
uint64_t smallestFastBudget(const PlanningGraph &graph,
                            const MachineModel &device);

enum class MilpStatus { Optimal, Feasible, NoSolution, Infeasible };
llvm::StringRef stringifyMilpStatus(MilpStatus status);

struct MilpOptions {
  /// Wall-clock limit for the solver (HiGHS).
  double timeLimitSeconds = 60;
  /// A recompute-only plan's op runs (Plan::opOrder) for the solver to
  /// start from: it then holds a plan from the first moment, and prunes
  /// with its cost. Where the solver ends with nothing cheaper (out of
  /// time, or a start its stage model cannot express: two runs of an op in
  /// one stage, or runs whose order within a stage it would change), the
  /// start is the result. Empty: none.
  std::vector<OpId> startRuns;
};

struct MilpResult {
  MilpStatus status = MilpStatus::NoSolution;
  /// Set for Optimal and Feasible.
  std::optional<Plan> plan;
  /// Proven lower bound on the total compute cost of any plan that meets the
  /// budget (the solver's best bound); the gap to plan's cost shows how far
  /// from optimal the plan may be. Meaningless when Infeasible; 0 (no bound)
  /// when a start outside the solver's model is the plan and costs less
  /// than that bound.
  double lowerBoundCost = 0;
  double solveSeconds = 0;
};

/// Checkmate-style MILP (Jain et al. 2020), solved with HiGHS: stage t runs op
/// t and may recompute any earlier op; minimises total compute cost with the
/// memory of every step within `budget`. Recompute only (no offload).
/// Variables grow as n^2: meant for graphs of at most a few hundred ops.
llvm::Expected<MilpResult> planMilp(const PlanningGraph &graph, uint64_t budget,
                                    const MachineModel &device,
                                    const MilpOptions &options = {});

/// A lower bound on the recompute cost of every recompute-only plan that
/// keeps the graph's schedule (first runs in schedule order) and meets the
/// budget, from the "interval-drop" relaxation (docs/planner.md): at each op
/// of the schedule the tensors alive across it must fit beside what the op
/// touches, and a tensor absent anywhere between two consecutive uses costs
/// at least one rerun of its producer. Reruns' own memory and the inputs
/// they need are ignored, which is what makes it a relaxation. A covering
/// problem with one variable per use gap, far smaller than the MILP.
struct RecomputeBound {
  /// Proven: no such plan meets the budget.
  bool infeasible = false;
  /// Extra compute cost (cost units, as PlanOp::cost) every such plan pays.
  double extraCost = 0;
  /// HiGHS solved the relaxation to optimality (else extraCost is its best
  /// bound, still valid).
  bool exact = false;
  double solveSeconds = 0;
};

llvm::Expected<RecomputeBound>
recomputeLowerBound(const PlanningGraph &graph, uint64_t budget,
                    const MilpOptions &options = {});

} // namespace vram::planner

#endif // VRAM_PLANNER_PLANNERS_H
