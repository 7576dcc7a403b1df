//===- TensorSize.cpp - byte sizes of tensor and memref values ------------===//

#include "vram/Dialect/ONNX/TensorSize.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace vram {

FailureOr<uint64_t> getElementStorageBits(Type elementType) {
  if (elementType.isInteger(1))
    return 8;
  if (auto complex = dyn_cast<ComplexType>(elementType)) {
    FailureOr<uint64_t> part = getElementStorageBits(complex.getElementType());
    if (failed(part))
      return failure();
    return 2 * *part;
  }
  if (isa<IndexType, ONNXStringType>(elementType))
    return 64;
  if (elementType.isIntOrFloat())
    return elementType.getIntOrFloatBitWidth();
  return failure();
}

FailureOr<uint64_t> getTensorByteSize(Type type) {
  if (isa<NoneType>(type))
    return 0;
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return failure();
  FailureOr<uint64_t> bits = getElementStorageBits(shaped.getElementType());
  if (failed(bits))
    return failure();
  uint64_t totalBits = *bits;
  bool overflow = false;
  for (int64_t dim : shaped.getShape()) {
    totalBits = llvm::SaturatingMultiply(totalBits, uint64_t(dim), &overflow);
    if (overflow)
      return failure();
  }
  // Rounded up to whole bytes: a packed i4 tensor of 3 elements takes 2.
  return llvm::divideCeil(totalBits, 8);
}

} // namespace vram
