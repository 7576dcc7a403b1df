//===- VramDialect.cpp - registration, host type and attribute checks -----===//

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace vram;

#include "vram/Dialect/Vram/VramDialect.cpp.inc"

#include "vram/Dialect/Vram/VramEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "vram/Dialect/Vram/VramAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "vram/Dialect/Vram/VramTypes.cpp.inc"

void VramDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "vram/Dialect/Vram/VramOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "vram/Dialect/Vram/VramAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "vram/Dialect/Vram/VramTypes.cpp.inc"
      >();
}

LogicalResult
HostTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                       RankedTensorType tensorType) {
  // A host copy is allocated once with a known size; a dynamic shape would
  // need the size carried at run time, which no copy op here provides.
  if (!tensorType.hasStaticShape())
    return emitError() << "host tensor needs a static shape, got "
                       << tensorType;
  return success();
}

LogicalResult VramDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool valid, StringRef expected) -> LogicalResult {
    if (valid)
      return success();
    return op->emitOpError() << "'" << name << "' must be " << expected;
  };
  if (name == kRecomputeAttrName) {
    if (failed(expect(isa<UnitAttr>(value), "a unit attribute")))
      return failure();
    // Repeating an op is only the same computation when it has no effects;
    // a clone of an op that writes memory would write twice.
    if (op->getNumResults() == 0 || !isMemoryEffectFree(op))
      return op->emitOpError()
             << "is marked '" << name
             << "' but only ops with results and no memory effects can be "
                "recomputed";
    return success();
  }
  if (name == kPlanAttrName || name == kUnmetBudgetAttrName)
    return expect(isa<DictionaryAttr>(value), "a dictionary");
  if (name == kBudgetAttrName || name == kPlannedPeakAttrName ||
      name == kLoweredPeakAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(value);
    return expect(bytes && !bytes.getValue().isNegative(),
                  "a non-negative integer (bytes)");
  }
  if (name == kReplicatedReadersAttrName)
    return expect(isa<UnitAttr>(value) && isa<shard::AllGatherOp>(op),
                  "a unit attribute on a shard.all_gather");
  if (name == kNoLibraryWorkspaceAttrName)
    return expect(isa<UnitAttr>(value), "a unit attribute");
  if (name == kResultsInArgumentsAttrName)
    return expect(isa<DenseI64ArrayAttr>(value), "an array of i64");
  if (name == kPhaseAttrName)
    return expect(isa<PhaseAttr>(value), "#vram.phase<backward> or "
                                         "#vram.phase<optimizer>");
  if (name == kCategoryAttrName)
    return expect(isa<MemoryCategoryAttr>(value), "a memory category, e.g. "
                                                  "#vram.category<gradient>");
  if (name == kPipelineStageAttrName) {
    auto stage = dyn_cast<DictionaryAttr>(value);
    auto field = [&](StringRef key) {
      return stage ? stage.getAs<IntegerAttr>(key) : nullptr;
    };
    IntegerAttr index = field("stage"), stages = field("stages"),
                microbatches = field("microbatches");
    return expect(index && stages && microbatches && stages.getInt() >= 1 &&
                      index.getInt() >= 0 && index.getInt() < stages.getInt() &&
                      microbatches.getInt() >= 1,
                  "{stage, stages, microbatches} with 0 <= stage < stages "
                  "and microbatches >= 1");
  }
  if (name == kParamAttrName)
    return op->emitOpError()
           << "'" << name << "' belongs on a function argument";
  // A misspelt name would silently lose what the attribute says.
  return op->emitOpError() << "has unknown attribute '" << name
                           << "' of the vram dialect";
}

LogicalResult VramDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kFlatOfAttrName) {
    auto type = dyn_cast<TypeAttr>(attr.getValue());
    auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
    if (!tensor || !tensor.hasStaticShape())
      return op->emitOpError() << "argument " << argIndex << ": '" << name
                               << "' must be a statically shaped tensor type";
    return success();
  }
  if (name == kTensorSliceOfAttrName) {
    auto slice = dyn_cast<DictionaryAttr>(attr.getValue());
    auto type = slice ? slice.getAs<TypeAttr>("type") : nullptr;
    auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
    auto axis = slice ? slice.getAs<IntegerAttr>("axis") : nullptr;
    auto parts = slice ? slice.getAs<DenseI64ArrayAttr>("parts") : nullptr;
    if (!tensor || !tensor.hasStaticShape() || !axis || !parts ||
        axis.getInt() < 0 || axis.getInt() >= tensor.getRank() ||
        llvm::sum_of(parts.asArrayRef()) != tensor.getDimSize(axis.getInt()))
      return op->emitOpError()
             << "argument " << argIndex << ": '" << name
             << "' must be {type = <static tensor type>, axis = <i64>, parts "
                "= array<i64: ...>} with parts summing to the axis' size";
    return success();
  }
  if (name == kPipelineSharedAttrName) {
    if (!isa<DenseI64ArrayAttr>(attr.getValue()))
      return op->emitOpError() << "argument " << argIndex << ": '" << name
                               << "' must be an array of i64 (stages)";
    return success();
  }
  if (name == kPipelineRecvAttrName) {
    auto from = dyn_cast<StringAttr>(attr.getValue());
    if (!from || (from.getValue() != "previous" && from.getValue() != "next"))
      return op->emitOpError() << "argument " << argIndex << ": '" << name
                               << "' must be \"previous\" or \"next\"";
    return success();
  }
  if (name != kParamAttrName)
    return op->emitOpError()
           << "argument " << argIndex << " has unknown attribute '" << name
           << "' of the vram dialect";
  if (!isa<ParamKindAttr>(attr.getValue()))
    return op->emitOpError() << "argument " << argIndex << ": '" << name
                             << "' must be #vram.param<trainable>, <state>, "
                                "<optimizer_state> or <gradient>";
  return success();
}

LogicalResult VramDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kPipelineSendAttrName)
    return op->emitOpError()
           << "result " << resultIndex << " has unknown attribute '" << name
           << "' of the vram dialect";
  auto to = dyn_cast<StringAttr>(attr.getValue());
  if (!to || (to.getValue() != "previous" && to.getValue() != "next"))
    return op->emitOpError() << "result " << resultIndex << ": '" << name
                             << "' must be \"previous\" or \"next\"";
  return success();
}

std::optional<ParamKind> vram::getParamKind(FunctionOpInterface func,
                                            unsigned argument) {
  if (auto kind = func.getArgAttrOfType<ParamKindAttr>(
          argument, VramDialect::kParamAttrName))
    return kind.getValue();
  return std::nullopt;
}

/// The dialect, loaded: its attributes can be built in a context that
/// only registered it (a program parsed without vram ops).
static MLIRContext *withVramDialect(Operation *op) {
  op->getContext()->getOrLoadDialect<VramDialect>();
  return op->getContext();
}

void vram::setParamKind(FunctionOpInterface func, unsigned argument,
                        ParamKind kind) {
  func.setArgAttr(argument, VramDialect::kParamAttrName,
                  ParamKindAttr::get(withVramDialect(func), kind));
}

std::optional<Phase> vram::getPhase(Operation *op) {
  if (auto phase = op->getAttrOfType<PhaseAttr>(VramDialect::kPhaseAttrName))
    return phase.getValue();
  return std::nullopt;
}

void vram::setPhase(Operation *op, Phase phase) {
  op->setAttr(VramDialect::kPhaseAttrName,
              PhaseAttr::get(withVramDialect(op), phase));
}

std::optional<MemoryCategory> vram::getCategory(Operation *op) {
  if (auto category =
          op->getAttrOfType<MemoryCategoryAttr>(VramDialect::kCategoryAttrName))
    return category.getValue();
  return std::nullopt;
}

void vram::setCategory(Operation *op, MemoryCategory category) {
  op->setAttr(VramDialect::kCategoryAttrName,
              MemoryCategoryAttr::get(withVramDialect(op), category));
}
