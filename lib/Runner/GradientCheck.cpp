//===- GradientCheck.cpp - finite-difference checks of a gradient step ----===//

#include "vram/Runner/GradientCheck.h"

#include <cmath>

using namespace vram;

namespace {
/// Step and tolerances for a parameter's element type. f64: h = 1e-6 keeps
/// the truncation error (~h^2) and the rounding error (~1e-16 / h) near
/// 1e-10, far under the tolerance. Narrower floats: rounding dominates, so
/// h is larger and the tolerance loose; the checks here are meant for f64.
struct Defaults {
  double step;
  Tolerance tolerance;
};

Defaults getDefaults(ElementKind kind) {
  if (kind == ElementKind::F64)
    return {1e-6, {1e-6, 1e-8}};
  return {1e-2, {2e-2, 1e-3}};
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

llvm::Expected<llvm::SmallVector<ParameterGradientCheck>>
vram::checkGradients(CompiledFunction &step,
                     llvm::ArrayRef<HostTensor> arguments,
                     const GradientCheckOptions &options) {
  const FunctionSignature &signature = step.getSignature();
  if (signature.results.empty() || !signature.results[0].shape.empty() ||
      !isFloatingPoint(signature.results[0].kind))
    return error("a gradient check needs a step whose first result is the "
                 "scalar loss (vram-train optimizer=none)");

  // The call copies its arguments: compiled code may write into argument
  // buffers (function arguments bufferize as writable).
  llvm::SmallVector<HostTensor> working(arguments.begin(), arguments.end());
  auto evaluate = [&]() -> llvm::Expected<llvm::SmallVector<HostTensor>> {
    llvm::SmallVector<HostTensor> copy(working.begin(), working.end());
    return step.invoke(copy);
  };
  llvm::Expected<llvm::SmallVector<HostTensor>> base = evaluate();
  if (!base)
    return base.takeError();

  llvm::SmallVector<ParameterGradientCheck> checks;
  for (auto [resultIndex, result] : llvm::enumerate(signature.results)) {
    llvm::StringRef name = result.name;
    if (resultIndex == 0 || !name.consume_back(".grad"))
      continue;
    const TensorSpec *param = nullptr;
    unsigned argIndex = 0;
    for (auto [index, spec] : llvm::enumerate(signature.arguments))
      if (spec.name == name) {
        param = &spec;
        argIndex = index;
      }
    if (!param || param->shape != result.shape || param->kind != result.kind)
      return error("gradient '" + result.name +
                   "' has no argument of the same type named '" + name + "'");

    Defaults defaults = getDefaults(param->kind);
    ParameterGradientCheck check;
    check.parameter = name.str();
    check.step = options.step > 0 ? options.step : defaults.step;
    check.tolerance = options.tolerance.rtol > 0 || options.tolerance.atol > 0
                          ? options.tolerance
                          : defaults.tolerance;
    const HostTensor &analytic = (*base)[resultIndex];
    int64_t elements = analytic.getNumElements();
    int64_t stride = std::max<int64_t>(
        1, elements / std::max<unsigned>(options.maxElementsPerParameter, 1));
    double worstRatio = -1.0;
    HostTensor &value = working[argIndex];
    for (int64_t i = 0; i < elements; i += stride) {
      // Loss at original +/- h; the divisor is the step actually taken once
      // the perturbed values are rounded to the element type.
      double original = value.getAsDouble(i);
      double perturbed[2], loss[2];
      for (int side = 0; side < 2; ++side) {
        value.setFromDouble(i, side == 0 ? original + check.step
                                         : original - check.step);
        perturbed[side] = value.getAsDouble(i);
        llvm::Expected<llvm::SmallVector<HostTensor>> outputs = evaluate();
        if (!outputs)
          return outputs.takeError();
        loss[side] = (*outputs)[0].getAsDouble(0);
      }
      value.setFromDouble(i, original);

      double numeric = (loss[0] - loss[1]) / (perturbed[0] - perturbed[1]);
      double got = analytic.getAsDouble(i);
      double absolute = std::fabs(got - numeric);
      double relative = numeric != 0.0 ? absolute / std::fabs(numeric) : 0.0;
      double allowed =
          check.tolerance.atol + check.tolerance.rtol * std::fabs(numeric);
      check.maxAbsoluteError = std::max(check.maxAbsoluteError, absolute);
      check.maxRelativeError = std::max(check.maxRelativeError, relative);
      if (!(absolute <= allowed))
        check.passed = false;
      double ratio = std::isnan(absolute) ? INFINITY : absolute / allowed;
      if (ratio > worstRatio) {
        worstRatio = ratio;
        check.worstIndex = i;
        check.worstAnalytic = got;
        check.worstNumeric = numeric;
      }
      ++check.elementsChecked;
    }
    checks.push_back(std::move(check));
  }
  if (checks.empty())
    return error("the step returns no '<parameter>.grad' result "
                 "(vram-train optimizer=none)");
  return checks;
}
