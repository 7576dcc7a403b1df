//===- PlanningGraph.h - Ops, tensors and schedule the planner works on ---===//
//
// The planner's input: a DAG of ops (compute cost) and tensors (bytes,
// producer, consumers, category), plus the device it runs on. Op ids are
// positions in the given topological schedule: the order in which ops are
// added is the order in which they run when nothing is planned.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_PLANNER_PLANNINGGRAPH_H
#define VRAM_PLANNER_PLANNINGGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vram::planner {

using OpId = unsigned;
using TensorId = unsigned;

enum class TensorCategory {
  Parameter,
  Input,
  Activation,
  Gradient,
  OptimizerState,
  Output,
};

struct PlanOp {
  std::string name;
  /// Compute time at speed 1, in the unit of MachineModel's time base.
  double cost = 0;
  /// Part of the backward pass. Only Chen's baseline reads this: it drops
  /// forward activations after their last forward use.
  bool isBackward = false;
  llvm::SmallVector<TensorId, 2> inputs;
  llvm::SmallVector<TensorId, 1> outputs;
  /// Inputs the op overwrites in place (an optimizer update into a
  /// parameter, a scatter into its data): their value afterwards is another
  /// than the one their producer makes, and host copies made before are
  /// stale.
  llvm::SmallVector<TensorId, 1> writes;
};

struct PlanTensor {
  std::string name;
  uint64_t bytes = 0;
  /// Empty for tensors that exist before the program starts (parameters,
  /// inputs): those are resident from the first step.
  std::optional<OpId> producer;
  /// Sorted, without duplicates.
  llvm::SmallVector<OpId, 2> consumers;
  TensorCategory category = TensorCategory::Activation;
  bool recomputable = true;
  bool offloadable = true;
  /// Sorted: the ops that overwrite it in place. Rerunning the producer
  /// cannot rebuild such a tensor.
  llvm::SmallVector<OpId, 1> writers;
  /// An input of the producer whose storage this tensor takes over (a
  /// scatter into a buffer nothing else reads): the producer consumes that
  /// input's resident instance instead of allocating.
  std::optional<TensorId> reusesStorageOf;
};

class PlanningGraph {
public:
  /// Appends an op at the end of the schedule.
  OpId addOp(llvm::StringRef name, double cost, bool isBackward = false);
  TensorId addTensor(llvm::StringRef name, uint64_t bytes,
                     TensorCategory category, std::optional<OpId> producer,
                     bool recomputable = true, bool offloadable = true);
  /// Records that `consumer` reads `tensor`; repeated uses are merged.
  void addUse(OpId consumer, TensorId tensor);
  /// Records that `writer` reads `tensor` and overwrites it in place. Meant
  /// for persistent tensors; the result of an in-place op on an activation
  /// is a tensor of its own that reuses its input's storage.
  void addWrite(OpId writer, TensorId tensor);
  /// Records that `tensor` is made in the storage of `input`, an input of
  /// its producer that no later op reads.
  void setReusesStorageOf(TensorId tensor, TensorId input);

  /// Checks that the schedule is topological (every tensor is produced before
  /// it is read) and that costs are finite and non-negative.
  llvm::Error verify() const;

  llvm::ArrayRef<PlanOp> ops() const { return opList; }
  llvm::ArrayRef<PlanTensor> tensors() const { return tensorList; }
  const PlanOp &op(OpId id) const { return opList[id]; }
  const PlanTensor &tensor(TensorId id) const { return tensorList[id]; }
  size_t numOps() const { return opList.size(); }
  size_t numTensors() const { return tensorList.size(); }

  // Inline: the replay asks these for every input it walks.
  /// Parameters and optimizer state live for the whole program.
  bool isPersistent(TensorId id) const {
    TensorCategory c = tensorList[id].category;
    return c == TensorCategory::Parameter ||
           c == TensorCategory::OptimizerState;
  }
  /// Persistent tensors and outputs are never freed once they exist.
  bool mustStayResident(TensorId id) const {
    return isPersistent(id) ||
           tensorList[id].category == TensorCategory::Output;
  }
  /// Whether re-running the producer may rebuild this tensor.
  bool canRecompute(TensorId id) const {
    const PlanTensor &tensor = tensorList[id];
    return tensor.producer && tensor.recomputable && tensor.writers.empty();
  }
  /// Whether a run of `op` before the schedule reaches op `at` reads the
  /// values its first run read: no input has been overwritten in place by
  /// an op scheduled after `op` and before `at`.
  bool canRerunBefore(OpId op, OpId at) const {
    return at <= firstOverwriteAfter[op];
  }

  /// For each tensor, the last op that may need it: its last consumer or,
  /// for a tensor that cannot be recomputed, the last op that may need any
  /// tensor recomputed from it (a plan must keep it that long unless it has
  /// a host copy). -1 for an unused tensor with no producer.
  std::vector<int64_t> lastOpNeeding() const;

  /// Sum of all op costs: the compute time of one unplanned run at speed 1.
  double totalCost() const;
  /// Bytes of every persistent tensor.
  uint64_t persistentBytes() const;
  /// Bytes of the non-persistent inputs and outputs of `op` (an output in
  /// an input's storage counted once): all of them are live while it runs,
  /// whatever the plan.
  uint64_t bytesTouchedBy(OpId op) const;

private:
  std::vector<PlanOp> opList;
  std::vector<PlanTensor> tensorList;
  /// By op: the first op after it in the schedule that overwrites one of
  /// its inputs (the largest OpId when none does).
  std::vector<OpId> firstOverwriteAfter;
};

/// What the planner needs to know about the device it plans for: the
/// timing model its overhead figures assume (vram::DeviceProfile, the
/// datasheet entry, is turned into one by getPlannerDevice).
struct MachineModel {
  /// Op cost units executed per time unit.
  double computeSpeed = 1.0;
  /// Host link bandwidth in bytes per time unit, each direction; 0 disables
  /// offloading.
  double hostLinkBytesPerTime = 0;
  /// Copies run on their own engines, concurrently with compute. When false
  /// every copy blocks compute for its whole duration.
  bool copiesOverlapCompute = true;

  bool canOffload() const { return hostLinkBytesPerTime > 0; }
  /// The same device with offloading disabled: a recompute-only plan.
  MachineModel withoutHostLink() const {
    MachineModel device = *this;
    device.hostLinkBytesPerTime = 0;
    return device;
  }
  double computeTime(double cost) const { return cost / computeSpeed; }
  double copyTime(uint64_t bytes) const {
    return static_cast<double>(bytes) / hostLinkBytesPerTime;
  }
};

} // namespace vram::planner

#endif // VRAM_PLANNER_PLANNINGGRAPH_H
