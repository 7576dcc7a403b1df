//===- MemoryCategory.cpp - what each byte of a program is for ------------===//

#include "vram/Analysis/MemoryCategory.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

namespace vram {

StringRef getCategoryTitle(MemoryCategory category) {
  switch (category) {
  case MemoryCategory::Parameter:
    return "parameters (trainable)";
  case MemoryCategory::State:
    return "model state (non-trainable)";
  case MemoryCategory::Input:
    return "inputs";
  case MemoryCategory::SavedActivation:
    return "activations saved for backward";
  case MemoryCategory::Activation:
    return "activations (transient)";
  case MemoryCategory::Output:
    return "outputs";
  case MemoryCategory::Gradient:
    return "gradients";
  case MemoryCategory::OptimizerState:
    return "optimizer state";
  case MemoryCategory::Workspace:
    return "workspace";
  case MemoryCategory::Communication:
    return "communication buffers";
  }
  llvm_unreachable("unknown memory category");
}

bool isBackwardOp(Operation *op) { return getPhase(op) == Phase::Backward; }

MemoryCategory classifyValue(Value value, bool isReturned,
                             bool isReadByBackward) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (func && arg.getOwner()->isEntryBlock()) {
      if (std::optional<ParamKind> kind =
              getParamKind(func, arg.getArgNumber())) {
        switch (*kind) {
        case ParamKind::Trainable:
          return MemoryCategory::Parameter;
        case ParamKind::State:
          return MemoryCategory::State;
        case ParamKind::OptimizerState:
          return MemoryCategory::OptimizerState;
        case ParamKind::Gradient:
          return MemoryCategory::Gradient;
        }
      }
    }
    return MemoryCategory::Input;
  }
  Operation *producer = value.getDefiningOp();
  if (producer->hasTrait<OpTrait::ConstantLike>())
    return MemoryCategory::State;
  if (std::optional<MemoryCategory> category = getCategory(producer))
    return *category;
  if (isReturned)
    return MemoryCategory::Output;
  if (isReadByBackward && !isBackwardOp(producer))
    return MemoryCategory::SavedActivation;
  return MemoryCategory::Activation;
}

} // namespace vram
