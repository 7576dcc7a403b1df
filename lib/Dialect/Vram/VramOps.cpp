//===- VramOps.cpp - verifiers of the vram ops ---------------------===//

#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Dialect/ONNX/TensorSize.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace vram;

/// The rule of vram.update as a bare keyword (`adam`); the attribute keeps
/// its full form (`#vram.rule<adam>`) in the generic syntax.
static ParseResult parseUpdateRule(OpAsmParser &parser, UpdateRuleAttr &rule) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<UpdateRule> parsed = symbolizeUpdateRule(keyword);
  if (!parsed)
    return parser.emitError(loc) << "unknown update rule '" << keyword
                                 << "' (sgd, momentum, adam or adamw)";
  rule = UpdateRuleAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printUpdateRule(OpAsmPrinter &printer, Operation *,
                            UpdateRuleAttr rule) {
  printer << stringifyUpdateRule(rule.getValue());
}

#define GET_OP_CLASSES
#include "vram/Dialect/Vram/VramOps.cpp.inc"

/// The checks both copies share: the device tensor is statically shaped (the
/// host buffer is allocated with a fixed size) and it is exactly the tensor
/// the host type holds, so a round trip gives back the same type.
static LogicalResult verifyCopy(Operation *op, RankedTensorType deviceType,
                                HostTensorType hostType) {
  if (!deviceType.hasStaticShape())
    return op->emitOpError()
           << "needs a statically shaped device tensor, got " << deviceType;
  if (deviceType != hostType.getTensorType())
    return op->emitOpError()
           << "device tensor type " << deviceType
           << " does not match the host tensor type " << hostType;
  return success();
}

/// Bytes of a verified (static) tensor type.
static uint64_t staticByteSize(RankedTensorType type) {
  FailureOr<uint64_t> bytes = getTensorByteSize(type);
  return succeeded(bytes) ? *bytes : 0;
}

//===----------------------------------------------------------------------===//
// OffloadOp
//===----------------------------------------------------------------------===//

LogicalResult OffloadOp::verify() {
  return verifyCopy(*this, getDeviceType(),
                    cast<HostTensorType>(getResult().getType()));
}

RankedTensorType OffloadOp::getDeviceType() {
  return cast<RankedTensorType>(getInput().getType());
}

uint64_t OffloadOp::getTransferBytes() {
  return staticByteSize(getDeviceType());
}

//===----------------------------------------------------------------------===//
// PrefetchOp
//===----------------------------------------------------------------------===//

LogicalResult PrefetchOp::verify() {
  return verifyCopy(*this, getDeviceType(),
                    cast<HostTensorType>(getInput().getType()));
}

RankedTensorType PrefetchOp::getDeviceType() {
  return cast<RankedTensorType>(getResult().getType());
}

uint64_t PrefetchOp::getTransferBytes() {
  return staticByteSize(getDeviceType());
}

//===----------------------------------------------------------------------===//
// UpdateOp
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> UpdateOp::getStateNames(UpdateRule rule) {
  static const StringRef momentum[] = {"momentum"};
  static const StringRef adam[] = {"exp_avg", "exp_avg_sq"};
  switch (rule) {
  case UpdateRule::SGD:
    return {};
  case UpdateRule::Momentum:
    return momentum;
  case UpdateRule::Adam:
  case UpdateRule::AdamW:
    return adam;
  }
  llvm_unreachable("unknown update rule");
}

// Each result is the new content of its init.
LogicalResult UpdateOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Adaptor adaptor(operands, attributes, properties, regions);
  llvm::append_range(inferredReturnTypes, adaptor.getInits().getTypes());
  return success();
}

LogicalResult UpdateOp::verify() {
  UpdateRule rule = getRule();
  if (getAccumulate() < 1)
    return emitOpError() << "accumulate must be at least 1, got "
                         << getAccumulate();
  bool accumulates = getAccumulate() > 1;
  size_t expected = 1 + (getMaster() ? 1 : 0) + getStateNames(rule).size() +
                    (accumulates ? 1 : 0);
  if (getInits().size() != expected)
    return emitOpError() << "rule '" << stringifyUpdateRule(rule)
                         << "' updates " << expected << " tensors (the parameter"
                         << (getMaster() ? ", its master weights" : "")
                         << (accumulates ? ", its state and the accumulated "
                                           "gradient"
                                         : " and its state")
                         << "), got " << getInits().size();
  bool readsStep = needsStepCount();
  if (readsStep != bool(getStep()))
    return emitOpError() << "rule '" << stringifyUpdateRule(rule) << "'"
                         << (accumulates ? " with accumulate" : "") << " "
                         << (readsStep ? "needs" : "takes no") << " step count";
  auto paramType = cast<RankedTensorType>(getInits().front().getType());
  if (!isa<FloatType>(paramType.getElementType()) ||
      !paramType.hasStaticShape())
    return emitOpError() << "the parameter must be a statically shaped "
                            "floating-point tensor, got "
                         << paramType;
  // With master weights the master copy and the rule's state are f32; the
  // accumulated gradient, like the gradient, has the parameter's type.
  auto stateType =
      getMaster() ? paramType.clone(Float32Type::get(getContext())) : paramType;
  if (getMaster() && paramType == stateType)
    return emitOpError() << "master weights need a half-precision parameter, "
                            "got "
                         << paramType;
  for (auto [index, init] : llvm::enumerate(getInits().drop_front())) {
    bool isAccumulator = accumulates && index + 2 == getInits().size();
    Type expectedType = isAccumulator ? paramType : stateType;
    if (init.getType() != expectedType)
      return emitOpError() << (isAccumulator ? "accumulated gradient"
                                             : "optimizer state")
                           << " of type " << init.getType()
                           << " does not match " << expectedType;
  }
  if (getGradient().getType() != paramType)
    return emitOpError() << "gradient of type " << getGradient().getType()
                         << " does not match the parameter's type "
                         << paramType;
  if (TypeRange(getResults()) != TypeRange(getInits()))
    return emitOpError("results must have the types of the inits");
  return success();
}
