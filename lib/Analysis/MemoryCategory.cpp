//===- MemoryCategory.cpp - what each byte of a program is for ------------===//

#include "vram/Analysis/MemoryCategory.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace vram {

namespace {
struct CategoryNames {
  MemoryCategory category;
  llvm::StringLiteral key;
  llvm::StringLiteral title;
};
constexpr CategoryNames kCategoryNames[kNumMemoryCategories] = {
    {MemoryCategory::Parameter, "parameter", "parameters (trainable)"},
    {MemoryCategory::State, "state", "model state (non-trainable)"},
    {MemoryCategory::Input, "input", "inputs"},
    {MemoryCategory::SavedActivation, "saved_activation",
     "activations saved for backward"},
    {MemoryCategory::Activation, "activation", "activations (transient)"},
    {MemoryCategory::Output, "output", "outputs"},
    {MemoryCategory::Gradient, "gradient", "gradients"},
    {MemoryCategory::OptimizerState, "optimizer_state", "optimizer state"},
    {MemoryCategory::Workspace, "workspace", "workspace"},
};
} // namespace

StringRef getCategoryKey(MemoryCategory category) {
  return kCategoryNames[static_cast<unsigned>(category)].key;
}

StringRef getCategoryTitle(MemoryCategory category) {
  return kCategoryNames[static_cast<unsigned>(category)].title;
}

std::optional<MemoryCategory> parseCategoryKey(StringRef key) {
  for (const CategoryNames &names : kCategoryNames)
    if (names.key == key)
      return names.category;
  return std::nullopt;
}

bool isBackwardOp(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>("vram.phase");
  return phase && phase.getValue() == "backward";
}

MemoryCategory classifyValue(Value value, bool isReturned,
                             bool isReadByBackward) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (func && arg.getOwner()->isEntryBlock()) {
      if (auto param = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         "vram.param")) {
        return llvm::StringSwitch<MemoryCategory>(param.getValue())
            .Case("trainable", MemoryCategory::Parameter)
            .Case("optimizer_state", MemoryCategory::OptimizerState)
            .Case("gradient", MemoryCategory::Gradient)
            .Default(MemoryCategory::State);
      }
    }
    return MemoryCategory::Input;
  }
  Operation *producer = value.getDefiningOp();
  if (producer->hasTrait<OpTrait::ConstantLike>())
    return MemoryCategory::State;
  if (auto category = producer->getAttrOfType<StringAttr>("vram.category"))
    if (std::optional<MemoryCategory> parsed =
            parseCategoryKey(category.getValue()))
      return *parsed;
  if (isReturned)
    return MemoryCategory::Output;
  if (isReadByBackward && !isBackwardOp(producer))
    return MemoryCategory::SavedActivation;
  return MemoryCategory::Activation;
}

} // namespace vram
