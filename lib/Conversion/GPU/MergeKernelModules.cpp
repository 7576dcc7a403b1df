//===- MergeKernelModules.cpp - the vram-gpu-merge-kernel-modules pass ----===//

#include "vram/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "vram-gpu-merge-kernel-modules"

namespace vram {
#define GEN_PASS_DEF_GPUMERGEKERNELMODULESPASS
#include "vram/Conversion/Passes.h.inc"
} // namespace vram

using namespace mlir;

namespace {
struct GPUMergeKernelModulesPass
    : public vram::impl::GPUMergeKernelModulesPassBase<
          GPUMergeKernelModulesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(
        module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.empty())
      return;
    SymbolTable moduleSymbols(module);
    if (Operation *clash = moduleSymbols.lookup(moduleName);
        clash && !llvm::is_contained(kernelModules, clash)) {
      clash->emitError() << "symbol '" << moduleName
                         << "' is taken; the merged gpu.module needs it";
      return signalPassFailure();
    }

    // The first module receives the others' contents, then takes the name.
    // Outlining names every kernel after its function (@main_kernel in
    // @main_kernel, @main_kernel_0, ...): a clashing symbol takes the name of
    // its module, which is unique.
    gpu::GPUModuleOp merged = kernelModules.front();
    SymbolTable mergedSymbols(merged);
    // (old module, old symbol) -> symbol in the merged module.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (gpu::GPUModuleOp source : llvm::drop_begin(kernelModules)) {
      StringAttr sourceName = source.getNameAttr();
      for (Operation &op :
           llvm::make_early_inc_range(source.getBody()->without_terminator())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (symbol && mergedSymbols.lookup(symbol.getName())) {
          if (mergedSymbols.lookup(sourceName)) {
            op.emitError() << "kernel symbol '" << symbol.getName()
                           << "' clashes in the merged gpu.module, and so "
                              "does its module's name '"
                           << sourceName.getValue() << "'";
            return signalPassFailure();
          }
          renamed[{sourceName, symbol.getNameAttr()}] = sourceName;
          SymbolTable::setSymbolName(symbol, sourceName);
        }
        op.moveBefore(merged.getBody()->getTerminator());
        if (symbol)
          mergedSymbols.insert(symbol);
      }
    }
    StringAttr mergedName = StringAttr::get(&getContext(), moduleName);
    module.walk([&](gpu::LaunchFuncOp launch) {
      StringAttr kernel = launch.getKernelName();
      if (StringAttr newName =
              renamed.lookup({launch.getKernelModuleName(), kernel}))
        kernel = newName;
      launch.setKernelAttr(
          SymbolRefAttr::get(mergedName, {FlatSymbolRefAttr::get(kernel)}));
    });
    for (gpu::GPUModuleOp source : llvm::drop_begin(kernelModules))
      source.erase();
    merged.setName(moduleName);
  }
};
} // namespace
