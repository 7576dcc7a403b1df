//===- OpHelpers.cpp - shared by the ONNX ops' verifiers and inference ----===//

#include "OpHelpers.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace vram::detail {

FailureOr<int64_t> normalizeAxis(Operation *op, int64_t axis, int64_t rank,
                                 bool allowRank) {
  if (axis < -rank || axis > rank || (axis == rank && !allowRank))
    return op->emitOpError() << "axis " << axis << " is out of range for rank "
                             << rank;
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> toInts(std::optional<ArrayAttr> attr) {
  SmallVector<int64_t> values;
  if (attr)
    for (Attribute a : *attr)
      values.push_back(cast<IntegerAttr>(a).getInt());
  return values;
}

LogicalResult verifyWindowAttrs(Operation *op, int64_t spatialRank,
                                WindowGeometry &window) {
  auto checkArity = [&](ArrayRef<int64_t> values, int64_t expected,
                        StringRef name) -> LogicalResult {
    if (!values.empty() && static_cast<int64_t>(values.size()) != expected)
      return op->emitOpError() << name << " has " << values.size()
                               << " values, expected " << expected;
    return success();
  };
  if (failed(checkArity(window.kernel, spatialRank, "kernel_shape")) ||
      failed(checkArity(window.strides, spatialRank, "strides")) ||
      failed(checkArity(window.dilations, spatialRank, "dilations")) ||
      failed(checkArity(window.pads, 2 * spatialRank, "pads")))
    return failure();
  if (!llvm::is_contained({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"},
                          window.autoPad))
    return op->emitOpError() << "auto_pad '" << window.autoPad
                             << "' is not NOTSET, SAME_UPPER, SAME_LOWER or "
                                "VALID";
  if (window.strides.empty())
    window.strides.assign(spatialRank, 1);
  if (window.dilations.empty())
    window.dilations.assign(spatialRank, 1);
  if (window.pads.empty())
    window.pads.assign(2 * spatialRank, 0);
  for (int64_t s : window.strides)
    if (s < 1)
      return op->emitOpError() << "strides must be positive";
  for (int64_t d : window.dilations)
    if (d < 1)
      return op->emitOpError() << "dilations must be positive";
  for (int64_t p : window.pads)
    if (p < 0)
      return op->emitOpError() << "pads must be non-negative";
  for (int64_t k : window.kernel)
    if (k < 1)
      return op->emitOpError() << "kernel_shape must be positive";
  return success();
}

int64_t windowOutputSize(const WindowGeometry &window, unsigned i,
                         int64_t input) {
  int64_t stride = window.strides[i];
  if (window.autoPad == "SAME_UPPER" || window.autoPad == "SAME_LOWER")
    return llvm::divideCeil(input, stride);
  int64_t effectiveKernel = window.dilations[i] * (window.kernel[i] - 1) + 1;
  int64_t padded = input - effectiveKernel;
  if (window.autoPad != "VALID")
    padded += window.pads[i] + window.pads[i + window.kernel.size()];
  if (padded < 0)
    return -1;
  int64_t size =
      (window.ceilMode ? llvm::divideCeil(padded, stride) : padded / stride) +
      1;
  // With ceil_mode, a last window that would start in the end padding is
  // dropped (ONNX's rule since 1.16, PyTorch's always).
  if (window.ceilMode && window.autoPad != "VALID" &&
      (size - 1) * stride >= input + window.pads[i])
    --size;
  return size;
}

} // namespace vram::detail
