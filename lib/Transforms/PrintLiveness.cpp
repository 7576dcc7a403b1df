//===- PrintLiveness.cpp - the vram-print-liveness test pass --------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "vram-print-liveness"

namespace vram {
#define GEN_PASS_DEF_PRINTLIVENESSPASS
#include "vram/Transforms/Passes.h.inc"
} // namespace vram

using namespace mlir;
using namespace vram;

namespace {
struct PrintLivenessPass
    : public vram::impl::PrintLivenessPassBase<PrintLivenessPass> {
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    for (auto func : getOperation().getOps<FunctionOpInterface>()) {
      if (func.isExternal())
        continue;
      auto &analysis = getChildAnalysis<MemoryAnalysis>(func);
      if (!analysis.isValid()) {
        emitAnalysisErrors(analysis, func);
        return signalPassFailure();
      }
      os << "liveness @" << func.getName() << ": peak "
         << analysis.getPeakBytes() << " bytes at op "
         << analysis.getPeakPoint() + 1 << "\n";
      for (const Buffer &buffer : analysis.getBuffers())
        os << "  buffer " << getBufferName(buffer) << " "
           << getCategoryKey(buffer.category) << " " << buffer.bytes
           << " live [" << buffer.begin + 1 << ", " << buffer.end + 1
           << "]\n";
      for (auto [point, op] : llvm::enumerate(analysis.getSchedule()))
        os << "  op " << point + 1 << " " << op->getName() << " '"
           << vram::getOpName(op) << "' live " << analysis.getLiveBytes(point)
           << "\n";
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
