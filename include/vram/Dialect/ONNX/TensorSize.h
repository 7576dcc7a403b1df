//===- TensorSize.h - byte sizes of tensor and memref values ----*- C++ -*-===//

#ifndef VRAM_DIALECT_ONNX_TENSORSIZE_H
#define VRAM_DIALECT_ONNX_TENSORSIZE_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

namespace vram {

/// Storage bits of one element: sub-byte types (i4, f4E2M1, ...) pack, i1 is
/// a byte (as ONNX bool and MLIR's memref lowering store it), complex is two
/// parts, index is 64 bits, ONNX strings count their 8-byte pointer. Failure
/// for element types with no storage size.
mlir::FailureOr<uint64_t> getElementStorageBits(mlir::Type elementType);

/// Bytes a tensor or memref of `type` occupies: ceil(elements * bits / 8).
/// Failure when the type is not shaped, has a dynamic or unranked shape, or
/// the size overflows 64 bits. `none` (an absent ONNX value) is 0 bytes.
mlir::FailureOr<uint64_t> getTensorByteSize(mlir::Type type);

} // namespace vram

#endif // VRAM_DIALECT_ONNX_TENSORSIZE_H
