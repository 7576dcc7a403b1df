//===- IRPlanning.h - between a function's IR and the memory planner -*- C++ -*-===//
//
// The planner library knows graphs, not IR. This glue builds a
// planner::PlanningGraph from a function body (tensors from
// vram::MemoryAnalysis, op times from the cost model), proposes a
// memory-friendly op order, writes a Plan back as IR (reordered ops,
// `vram.recompute` clones, vram.offload / vram.prefetch) and reports why each
// tensor was kept, recomputed or offloaded. docs/planning.md explains the
// mapping.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNING_IRPLANNING_H
#define VRAM_PLANNING_IRPLANNING_H

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Analysis/MemoryReport.h"
#include "vram/Planner/Planners.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace vram {

/// A function body as the planner sees it, with the way back to IR.
struct IRPlanningGraph {
  planner::PlanningGraph graph;
  /// By OpId: the op of the body that op id stands for.
  std::vector<mlir::Operation *> ops;
  /// By TensorId: the value the tensor is; null for the workspace of an op
  /// (modelled as an output nobody reads, so it lives while its op runs).
  std::vector<mlir::Value> values;
  /// By TensorId: the memory analysis' category of the tensor's buffer.
  std::vector<MemoryCategory> categories;
  /// The tensor of each value of the body that has one.
  llvm::DenseMap<mlir::Value, planner::TensorId> tensorOf;
};

/// The ops of `body` the planner schedules, in their current order: all but
/// the terminator and constants (ConstantLike ops are program data, resident
/// throughout, so they are tensors without a producer, not ops).
std::vector<mlir::Operation *> getPlannedOps(mlir::Block &body);

/// Topological orders of getPlannedOps(body) chosen for memory by
/// vram::planner::ordersForMemory (list schedules: least growth first, or
/// the current order with ops that shrink live bytes run as soon as they
/// can), over the analysis' buffers. Ops with memory effects keep their
/// relative order.
std::vector<std::vector<mlir::Operation *>>
schedulesForMemory(mlir::Block &body, const MemoryAnalysis &analysis);

/// Builds the planner's graph for `body`, the body `analysis` was computed
/// on, with ops in `order` (a topological order of getPlannedOps). Op costs are
/// roofline seconds on `device`. Arguments and constants are persistent
/// (the caller owns the first, the second are program data) and never
/// recomputed or offloaded; results of ops with memory effects are not
/// recomputable; only statically shaped tensors are offloadable.
IRPlanningGraph buildPlanningGraph(const MemoryAnalysis &analysis,
                                   mlir::Block &body,
                                   llvm::ArrayRef<mlir::Operation *> order,
                                   const DeviceProfile &device);

/// The planner's view of `device`: time unit one second, the host link
/// bandwidth only when `allowOffload`.
planner::MachineModel getPlannerDevice(const DeviceProfile &device,
                                       bool allowOffload);

/// Estimated seconds of `op` on `device`: host-link time for vram.offload
/// and vram.prefetch, the roofline of its cost model otherwise.
double estimateOpSeconds(mlir::Operation *op, const DeviceProfile &device);

/// `1,234 bytes (1.21 KiB)`: how budgets and peaks appear in messages.
std::string formatBudget(uint64_t bytes);

struct FunctionPlanOptions {
  uint64_t budget = 0;
  /// fast, milp, sqrt or none (docs/planning.md).
  std::string planner = "fast";
  bool allowOffload = true;
  bool allowReorder = false;
  /// Largest accepted overhead, as a fraction of the compute time; negative:
  /// no limit.
  double maxOverhead = -1;
};

/// Fails unless `name` is a planner planFunctionBody knows.
llvm::Error checkPlannerName(llvm::StringRef name);

/// planFunctionBody's error for a budget no plan meets: the smallest budget
/// that can be met, and the floor no plan goes below with what makes it up.
class UnmetBudgetError : public llvm::ErrorInfo<UnmetBudgetError> {
public:
  static char ID;
  UnmetBudgetError(uint64_t budget, uint64_t smallestBudget,
                   uint64_t floorBytes, std::string floorParts)
      : budget(budget), smallestBudget(smallestBudget), floorBytes(floorBytes),
        floorParts(std::move(floorParts)) {}

  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

  uint64_t budget;
  uint64_t smallestBudget;
  uint64_t floorBytes;
  std::string floorParts;
};

/// The plan chosen for a function body and the graph its ids refer to.
struct FunctionPlan {
  IRPlanningGraph planning;
  planner::Plan plan;
};

/// Plans `body`, the body `analysis` was computed on: the chosen planner on
/// the current order and, with allowReorder, on schedulesForMemory's orders;
/// less total time, then the lower peak, wins. Nothing is rewritten. Fails
/// with a message for the user: an unknown planner, a budget no plan meets
/// (naming the smallest budget that can be met and the lower bound), or a
/// plan whose overhead exceeds maxOverhead.
llvm::Expected<FunctionPlan> planFunctionBody(const MemoryAnalysis &analysis,
                                              mlir::Block &body,
                                              const DeviceProfile &device,
                                              const FunctionPlanOptions &options);

struct AppliedPlanStats {
  unsigned recomputedOps = 0;
  unsigned offloads = 0;
  uint64_t offloadedBytes = 0;
};

/// Rewrites `body` (the body `planning` was built from) to execute `plan`:
/// constants first, then ops in the plan's order, a clone marked
/// `vram.recompute` for every later run of an op, vram.offload and
/// vram.prefetch for the copies, and every use (terminator included)
/// redirected to the instance of its tensor that is resident at that point.
AppliedPlanStats applyPlan(mlir::Block &body, const IRPlanningGraph &planning,
                           const planner::Plan &plan);

/// What `plan` did, for the plan report and for every memory report.
/// `unplannedPeak` is the program's peak as written, whatever order the plan
/// runs its ops in.
PlanSummary summarizePlan(const IRPlanningGraph &planning,
                          const planner::Plan &plan, uint64_t budget,
                          uint64_t unplannedPeak, const DeviceProfile &device);

/// The function attribute `vram.plan` carrying `summary` (with `vram.budget`
/// and `vram.planned_peak`), and the summary read back from a function that
/// has all three.
mlir::DictionaryAttr getPlanSummaryAttr(mlir::MLIRContext *context,
                                        const PlanSummary &summary);
std::optional<PlanSummary> readPlanSummary(mlir::Operation *func);

/// VramDialect::kUnmetBudgetAttrName's dictionary holding `error`, and the
/// error read back from a function that has it.
mlir::DictionaryAttr getUnmetBudgetAttr(mlir::MLIRContext *context,
                                        const UnmetBudgetError &error);
std::optional<UnmetBudgetError> readUnmetBudget(mlir::Operation *func);

/// The plan report: a header (`summary`: budget, peaks, overhead split into
/// recompute and exposed copy time, arguments in host memory), the
/// arguments kept in host memory, then per layer (node-name prefix of
/// `layerDepth` components, as in the memory report) the bytes kept,
/// recomputed and offloaded, each followed by one line per tensor the layer
/// produces with its bytes, category, decision and the times that decided
/// it.
void printPlanReport(llvm::raw_ostream &os, llvm::StringRef functionName,
                     const IRPlanningGraph &planning,
                     const planner::Plan &plan, const PlanSummary &summary,
                     const DeviceProfile &device, bool allowOffload,
                     unsigned layerDepth = 2);

} // namespace vram

#endif // VRAM_PLANNING_IRPLANNING_H
