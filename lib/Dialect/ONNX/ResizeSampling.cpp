//===- ResizeSampling.cpp - where onnx.Resize reads its input ------------===//

#include "vram/Dialect/ONNX/ResizeSampling.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace vram {
namespace {

/// How output index x of one dimension maps to a source coordinate, per the
/// ONNX coordinate_transformation_mode (as the ONNX reference computes it:
/// `length` is scale * input size, unrounded).
std::optional<double> sourceCoordinate(StringRef mode, double x, int64_t inSize,
                                       int64_t outSize, double scale,
                                       double roiStart, double roiEnd) {
  double length = scale * inSize;
  if (mode == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel")
    return length > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  if (mode == "align_corners")
    return length == 1 ? 0.0 : x * (inSize - 1) / (length - 1);
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = outSize / length;
    double offset = inSize / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (mode == "tf_crop_and_resize") {
    double span = (roiEnd - roiStart) * (inSize - 1);
    double coordinate = length == 1 ? span / 2 : x * span / (length - 1);
    return coordinate + roiStart * (inSize - 1);
  }
  return std::nullopt;
}

/// The taps per output of one dimension: with `antialias` and a downscaling
/// `scale`, the kernel is stretched by 1 / scale, so it spans
/// 2 (1 - floor(-r / scale) - 1) taps for a kernel of radius r (1 linear,
/// 2 cubic); otherwise 2 r.
int64_t interpolationTapCount(bool cubic, bool antialias, double scale) {
  double radius = cubic ? 2 : 1;
  if (!antialias || scale >= 1)
    return 2 * radius;
  return 2 - 2 * (static_cast<int64_t>(std::floor(-radius / scale)) + 1);
}

/// The input indices (edge-clamped into [0, inSize)) and weights one output
/// value of one dimension mixes at source coordinate `x`: linear (2 taps)
/// or cubic (4 taps) interpolation, more with antialiasing.
struct InterpolationTaps {
  SmallVector<int64_t, 4> indices;
  SmallVector<double, 4> weights;
};

/// As the ONNX reference interpolates: the taps are the n indices nearest
/// to x (ties to the lower one) within the input edge-padded by n/2 on each
/// side, so an integral x sits on tap n/2 with ratio 1; linear weights are
/// the triangle kernel, cubic ones Keys' kernel with parameter `cubicA`,
/// each at distance (tap - n/2 + 1 - ratio) x min(1, scale) with
/// `antialias` (then normalised to sum 1), else at the plain distance; with
/// `excludeOutside`, taps outside the input get weight 0 and the rest are
/// renormalised.
InterpolationTaps interpolationTaps(double x, int64_t inSize, bool cubic,
                                    double cubicA, bool excludeOutside,
                                    bool antialias, double scale) {
  int64_t taps = interpolationTapCount(cubic, antialias, scale);
  double floor = std::floor(x);
  double ratio = x == floor ? 1.0 : x - floor;
  int64_t first = static_cast<int64_t>(std::ceil(x)) - taps / 2;
  first = std::clamp<int64_t>(first, -taps / 2, inSize + taps / 2 - taps);
  auto kernel = [&](double d) {
    d = std::abs(d);
    if (!cubic)
      return std::max(0.0, 1 - d);
    if (d <= 1)
      return ((cubicA + 2) * d - (cubicA + 3)) * d * d + 1;
    if (d < 2)
      return ((cubicA * d - 5 * cubicA) * d + 8 * cubicA) * d - 4 * cubicA;
    return 0.0;
  };
  double stretch = antialias ? std::min(1.0, scale) : 1.0;
  SmallVector<double, 4> weights;
  double kernelSum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    weights.push_back(kernel((tap - taps / 2 + 1 - ratio) * stretch));
    kernelSum += weights.back();
  }
  InterpolationTaps result;
  double sum = 0;
  for (int64_t tap = 0; tap < taps; ++tap) {
    if (antialias)
      weights[tap] /= kernelSum;
    int64_t index = first + tap;
    if (excludeOutside && (index < 0 || index >= inSize))
      weights[tap] = 0;
    sum += weights[tap];
    result.indices.push_back(std::clamp<int64_t>(index, 0, inSize - 1));
  }
  for (double weight : weights)
    result.weights.push_back(excludeOutside ? weight / sum : weight);
  return result;
}

/// Nearest: the coordinate rounded per nearest_mode, clamped into the input.
int64_t nearestIndex(StringRef nearestMode, double coordinate, int64_t inSize) {
  double floor = std::floor(coordinate);
  double ratio = coordinate - floor;
  bool up;
  if (ratio == 0 || nearestMode == "floor")
    up = false;
  else if (nearestMode == "ceil")
    up = true;
  else if (nearestMode == "round_prefer_ceil")
    up = ratio >= 0.5;
  else // round_prefer_floor, the default
    up = ratio > 0.5;
  return std::clamp<int64_t>(static_cast<int64_t>(floor) + (up ? 1 : 0), 0,
                             inSize - 1);
}

} // namespace

FailureOr<ResizeSampling>
getResizeSampling(ONNXResizeOp op, RankedTensorType inputType,
                  RankedTensorType resultType, ArrayRef<double> scales,
                  ArrayRef<double> roi,
                  llvm::function_ref<InFlightDiagnostic()> emitError) {
  int64_t rank = inputType.getRank();
  StringRef transform = op.getCoordinateTransformationMode();
  ResizeSampling sampling;
  if (scales.empty()) {
    for (int64_t dim = 0; dim < rank; ++dim)
      sampling.scales.push_back(double(resultType.getDimSize(dim)) /
                                inputType.getDimSize(dim));
  } else {
    if (static_cast<int64_t>(scales.size()) != rank)
      return emitError() << "needs one scale per dimension";
    for (int64_t dim = 0; dim < rank; ++dim)
      if (scales[dim] <= 0 || static_cast<int64_t>(std::floor(
                                  inputType.getDimSize(dim) * scales[dim])) !=
                                  resultType.getDimSize(dim))
        return emitError() << "scale " << scales[dim] << " of dimension " << dim
                           << " does not give the result type " << resultType;
    sampling.scales.assign(scales.begin(), scales.end());
  }
  if (transform == "tf_crop_and_resize" &&
      static_cast<int64_t>(roi.size()) != 2 * rank)
    return emitError() << "tf_crop_and_resize needs a constant roi of "
                       << 2 * rank << " values";
  sampling.coordinates.resize(rank);
  sampling.identity.assign(rank, true);
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t inSize = inputType.getDimSize(dim);
    int64_t outSize = resultType.getDimSize(dim);
    for (int64_t x = 0; x < outSize; ++x) {
      std::optional<double> coordinate = sourceCoordinate(
          transform, x, inSize, outSize, sampling.scales[dim],
          roi.empty() ? 0.0 : roi[dim], roi.empty() ? 1.0 : roi[rank + dim]);
      if (!coordinate)
        return emitError() << "coordinate_transformation_mode '" << transform
                           << "' is not supported";
      sampling.coordinates[dim].push_back(*coordinate);
      sampling.identity[dim] =
          sampling.identity[dim] && *coordinate == double(x);
      sampling.extrapolates |= *coordinate < 0 || *coordinate > inSize - 1;
    }
  }
  sampling.extrapolates &= transform == "tf_crop_and_resize";
  return sampling;
}

ResizeTaps getResizeTaps(ONNXResizeOp op, const ResizeSampling &sampling,
                         int64_t dim, int64_t inputSize) {
  ResizeTaps result;
  ArrayRef<double> coordinates = sampling.coordinates[dim];
  if (op.getMode() == "nearest") {
    result.indices.emplace_back();
    result.weights.emplace_back(coordinates.size(), 1.0);
    for (double coordinate : coordinates)
      result.indices[0].push_back(
          nearestIndex(op.getNearestMode(), coordinate, inputSize));
    return result;
  }
  bool cubic = op.getMode() == "cubic";
  bool antialias = op.getAntialias() != 0;
  int64_t taps = interpolationTapCount(cubic, antialias, sampling.scales[dim]);
  result.indices.resize(taps);
  result.weights.resize(taps);
  for (double coordinate : coordinates) {
    InterpolationTaps at = interpolationTaps(
        coordinate, inputSize, cubic, op.getCubicCoeffA().convertToDouble(),
        op.getExcludeOutside() != 0, antialias, sampling.scales[dim]);
    for (int64_t tap = 0; tap < taps; ++tap) {
      result.indices[tap].push_back(at.indices[tap]);
      result.weights[tap].push_back(at.weights[tap]);
    }
  }
  return result;
}

} // namespace vram
