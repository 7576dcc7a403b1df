//===- WriteGPUBinary.cpp - the vram-write-gpu-binary pass ----------------===//

#include "vram/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#define DEBUG_TYPE "vram-write-gpu-binary"

namespace vram {
#define GEN_PASS_DEF_WRITEGPUBINARYPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct WriteGPUBinaryPass
    : public vram::impl::WriteGPUBinaryPassBase<WriteGPUBinaryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    // One file holds one object: several would need a naming scheme, and
    // vram-gpu-merge-kernel-modules makes one anyway.
    if (binaries.size() != 1) {
      module.emitError() << "expected one gpu.binary, found "
                         << binaries.size()
                         << " (run gpu-module-to-binary, and "
                            "vram-gpu-merge-kernel-modules before it)";
      return signalPassFailure();
    }
    gpu::BinaryOp binary = binaries.front();
    ArrayAttr objects = binary.getObjectsAttr();
    if (objects.size() != 1) {
      binary.emitError() << "expected one object (one target), found "
                         << objects.size();
      return signalPassFailure();
    }
    auto object = cast<gpu::ObjectAttr>(objects[0]);
    std::string errorMessage;
    std::unique_ptr<llvm::ToolOutputFile> file =
        openOutputFile(output, &errorMessage);
    if (!file) {
      binary.emitError() << "cannot write '" << output
                         << "': " << errorMessage;
      return signalPassFailure();
    }
    file->os() << object.getObject().getValue();
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
