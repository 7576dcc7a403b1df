//===- VramOps.cpp - verifiers and cost models of offload and prefetch ----===//

#include "vram/Dialect/Vram/VramOps.h"
#include "vram/Analysis/TensorSize.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace vram;

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

// A copy does no arithmetic; on the device side it reads the tensor once.
// Its duration is set by the host link, not by this roofline: see
// estimateHostTransferSeconds.
double OffloadOp::getFlops() { return 0; }
double OffloadOp::getBytesAccessed() { return double(getTransferBytes()); }

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

double PrefetchOp::getFlops() { return 0; }
double PrefetchOp::getBytesAccessed() { return double(getTransferBytes()); }
