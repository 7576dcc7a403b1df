//===- ResizeSampling.h - where onnx.Resize reads its input -----*- C++ -*-===//
//
// Resize is separable: along each dimension, every output index mixes a few
// input indices with fixed weights, which depend only on that index, the
// sizes and the attributes. They are computed here, in double precision as
// the ONNX reference does, for the lowering (which reads the taps) and for
// the gradient (which spreads dY back along the same taps).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_DIALECT_ONNX_RESIZESAMPLING_H
#define VRAM_DIALECT_ONNX_RESIZESAMPLING_H

#include "vram/Dialect/ONNX/ONNXOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace vram {

/// Where a Resize samples its input, per dimension.
struct ResizeSampling {
  llvm::SmallVector<double> scales;
  /// Per dimension, per output index: the source coordinate.
  llvm::SmallVector<llvm::SmallVector<double>> coordinates;
  /// Dimensions that map every index to itself.
  llvm::SmallVector<bool> identity;
  /// Whether some coordinate lies outside the input and takes
  /// extrapolation_value (tf_crop_and_resize only; other modes clamp).
  bool extrapolates = false;
};

/// The sampling of `op` from `inputType` to `resultType` (static shapes).
/// `scales` are the op's scales when it has them (exporters pass an empty
/// input alongside `sizes`), `roi` its roi for tf_crop_and_resize. Reasons
/// it cannot be computed go to `emitError()`.
mlir::FailureOr<ResizeSampling>
getResizeSampling(ONNXResizeOp op, mlir::RankedTensorType inputType,
                  mlir::RankedTensorType resultType,
                  llvm::ArrayRef<double> scales, llvm::ArrayRef<double> roi,
                  llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The input indices one dimension's outputs read and their weights, as
/// [tap][output index]: one tap of weight 1 for nearest; for linear and
/// cubic, the taps of the interpolation kernel (more when antialiasing
/// stretches it), edge-clamped.
struct ResizeTaps {
  llvm::SmallVector<llvm::SmallVector<int64_t>> indices;
  llvm::SmallVector<llvm::SmallVector<double>> weights;
};

/// The taps of non-identity dimension `dim` of `sampling`, reading an input
/// of `inputSize` along it.
ResizeTaps getResizeTaps(ONNXResizeOp op, const ResizeSampling &sampling,
                         int64_t dim, int64_t inputSize);

} // namespace vram

#endif // VRAM_DIALECT_ONNX_RESIZESAMPLING_H
