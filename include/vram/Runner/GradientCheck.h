//===- GradientCheck.h - finite-difference gradient checks -----*- C++ -*-===//
//
// Checks the gradients a compiled training step returns (vram-train
// optimizer=none: the loss, then `<param>.grad` per trainable parameter)
// against central finite differences of the same step's loss.
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNNER_GRADIENTCHECK_H
#define VRAM_RUNNER_GRADIENTCHECK_H

#include "vram/Runner/JitRunner.h"

namespace vram {

struct GradientCheckOptions {
  /// Finite-difference step h: (L(p + h) - L(p - h)) / 2h. 0 picks one from
  /// the parameter's element type (1e-6 for f64, 1e-2 for narrower floats).
  double step = 0.0;
  /// |analytic - numeric| <= atol + rtol * |numeric| per element. 0 picks
  /// them from the element type (f64: 1e-6 / 1e-8; f32: 2e-2 / 1e-3).
  Tolerance tolerance{0.0, 0.0};
  /// Elements checked per parameter, evenly strided over it (each costs two
  /// calls of the step).
  unsigned maxElementsPerParameter = 32;
};

/// What the check measured for one parameter.
struct ParameterGradientCheck {
  std::string parameter;
  int64_t elementsChecked = 0;
  double maxAbsoluteError = 0.0;
  double maxRelativeError = 0.0;
  /// The element with the largest error relative to its tolerance.
  int64_t worstIndex = 0;
  double worstAnalytic = 0.0, worstNumeric = 0.0;
  double step = 0.0;
  Tolerance tolerance;
  bool passed = true;
};

/// Runs the check for every `<param>.grad` result of `step`, calling it with
/// `arguments` (perturbed one element at a time). Errors: a step whose first
/// result is not a scalar loss, a gradient result without its parameter, or
/// a failed call.
llvm::Expected<llvm::SmallVector<ParameterGradientCheck>>
checkGradients(CompiledFunction &step, llvm::ArrayRef<HostTensor> arguments,
               const GradientCheckOptions &options);

} // namespace vram

#endif // VRAM_RUNNER_GRADIENTCHECK_H
