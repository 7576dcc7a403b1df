//===- FuzzOptions.cpp - libFuzzer target: the drivers' option values -----===//
//
// What a user types after `--budget=`, `--device=`, `--train=` and into the
// `vram-plan{...}` pipeline options reaches these parsers; the first byte
// picks which one gets the rest. The training and planning options are run
// on a small model (a two-layer perceptron with a weight), so values that
// parse but make no sense (a negative learning rate, an empty precision, a
// budget of zero) must be refused by the passes, not crash them.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "vram/Analysis/DeviceProfile.h"
#include "vram/Support/ByteSize.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Error.h"

#include <string>

using namespace mlir;

static constexpr char kModel[] = R"(<ir_version: 8, opset_import: ["" : 17]>
mlp (float[batch, 4] x) => (float[batch, 2] y)
<float[4, 2] W = {1, 2, 3, 4, 5, 6, 7, 8}>
{
  h = MatMul(x, W)
  y = Relu(h)
}
)";

/// Runs `pipeline` on the model; true when it parsed and ran.
static bool runOnModel(MLIRContext &context, ModuleOp module,
                       const std::string &pipeline) {
  PassManager pm(&context);
  return succeeded(parsePassPipeline(pipeline, pm)) &&
         succeeded(pm.run(module));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string value(reinterpret_cast<const char *>(data) + 1, size - 1);
  // Braces would end the option list and start other passes of the
  // registry (some write files): not an option value.
  if (value.find_first_of("{}") != std::string::npos)
    return 0;
  switch (data[0] % 4) {
  case 0:
    llvm::consumeError(vram::parseByteSize(value).takeError());
    return 0;
  case 1:
    llvm::consumeError(vram::requireDeviceProfile(value).takeError());
    return 0;
  default:
    break;
  }
  MLIRContext context(vram::fuzz::getRegistry());
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  OwningOpRef<ModuleOp> module = vram::fuzz::importInput(
      reinterpret_cast<const uint8_t *>(kModel), sizeof(kModel) - 1, context);
  if (!module)
    return 0;
  if (data[0] % 4 == 2) {
    // --train=VALUE, then a plan at a fixed budget.
    if (runOnModel(context, *module, "vram-train{" + value + "}"))
      (void)runOnModel(context, *module,
                       "vram-plan{budget=200},vram-verify-plan");
    return 0;
  }
  // vram-plan{VALUE} on the training step.
  if (runOnModel(context, *module, "vram-train"))
    (void)runOnModel(context, *module,
                     "vram-plan{" + value + "},vram-verify-plan");
  return 0;
}
