//===- OpHelpers.h - shared by the ONNX ops' verifiers and inference -*- C++ -*-===//

#ifndef VRAM_LIB_DIALECT_ONNX_OPHELPERS_H
#define VRAM_LIB_DIALECT_ONNX_OPHELPERS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace vram::detail {

inline mlir::RankedTensorType getRankedType(mlir::Value value) {
  return value ? mlir::dyn_cast<mlir::RankedTensorType>(value.getType())
               : mlir::RankedTensorType();
}

/// Normalises a possibly negative ONNX axis in [-rank, rank) into [0, rank).
/// Ops (Flatten) whose axis may also equal the rank pass `allowRank`.
mlir::FailureOr<int64_t> normalizeAxis(mlir::Operation *op, int64_t axis,
                                       int64_t rank, bool allowRank = false);

llvm::SmallVector<int64_t> toInts(std::optional<mlir::ArrayAttr> attr);

/// The geometry of a sliding window (convolution or pooling) over the
/// spatial dimensions, with ONNX defaults filled in.
struct WindowGeometry {
  llvm::SmallVector<int64_t> kernel, strides, dilations, pads;
  llvm::StringRef autoPad;
  bool ceilMode = false;
};

/// Checks attribute arity and ranges; fills in default strides, dilations
/// and pads.
mlir::LogicalResult verifyWindowAttrs(mlir::Operation *op, int64_t spatialRank,
                                      WindowGeometry &window);

/// Output extent of spatial dimension `i`, per the ONNX Conv/Pool formulas;
/// -1 when the window does not fit.
int64_t windowOutputSize(const WindowGeometry &window, unsigned i,
                         int64_t input);

} // namespace vram::detail

#endif // VRAM_LIB_DIALECT_ONNX_OPHELPERS_H
