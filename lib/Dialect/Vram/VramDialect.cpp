//===- VramDialect.cpp - registration, host type and attribute checks -----===//

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"

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

/// The other `vram.*` attributes (vram.param, vram.phase, vram.category)
/// belong to the memory analysis and are checked where they are read.
LogicalResult VramDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kRecomputeAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    // Repeating an op is only the same computation when it has no effects;
    // a clone of an op that writes memory would write twice.
    if (op->getNumResults() == 0 || !isMemoryEffectFree(op))
      return op->emitOpError()
             << "is marked '" << name
             << "' but only ops with results and no memory effects can be "
                "recomputed";
    return success();
  }
  if ((name == kPlanAttrName || name == kUnmetBudgetAttrName) &&
      !isa<DictionaryAttr>(attr.getValue()))
    return op->emitOpError() << "'" << name << "' must be a dictionary";
  if (name == kBudgetAttrName || name == kPlannedPeakAttrName ||
      name == kLoweredPeakAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getValue().isNegative())
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer (bytes)";
  }
  return success();
}
