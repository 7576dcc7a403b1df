//===- JitRunner.h - JIT-compile and call an entry function ----*- C++ -*-===//
//
// The execution half of vram-run: compiles a module lowered to the LLVM
// dialect (by vram-lower-to-cpu, which the caller runs) with
// mlir::ExecutionEngine and calls the entry function with a pointer to one
// memref descriptor per argument and per result (vram-pack-entry-arguments).
//
//===----------------------------------------------------------------------===//

#ifndef VRAM_RUNNER_JITRUNNER_H
#define VRAM_RUNNER_JITRUNNER_H

#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Runner/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <vector>

namespace vram {

/// One argument or result of the entry function.
struct TensorSpec {
  /// `onnx.name` when the importer set it, else `argument<N>` / `result<N>`.
  std::string name;
  ElementKind kind;
  llvm::SmallVector<int64_t> shape;
  /// `vram.param`; std::nullopt for data inputs.
  std::optional<ParamKind> paramKind;
  /// The argument this one is the f32 master copy of (a `vram.update
  /// master` reads both), which a fresh optimizer starts from.
  std::optional<unsigned> masterOf;
  /// `vram.flat_of` (per-rank programs): the shape of the tensor whose flat
  /// layout, padded to a multiple of the ranks, this argument holds, whole
  /// or this rank's slice.
  std::optional<llvm::SmallVector<int64_t>> flatOf;
  /// `vram.tensor_slice_of` (tensor-parallel programs): the whole tensor
  /// this rank holds a part of (before any `flatOf` layout): its shape, the
  /// split axis and that axis' parts, of each of which the rank holds its
  /// chunk.
  struct TensorSlice {
    std::vector<int64_t> shape;
    int64_t axis;
    std::vector<int64_t> parts;
  };
  std::optional<TensorSlice> tensorSliceOf;

  std::string getTypeString() const;
};

struct FunctionSignature {
  llvm::SmallVector<TensorSpec> arguments;
  llvm::SmallVector<TensorSpec> results;
  /// The device grid of a per-rank program (vram-parallelize,
  /// vram-tensor-parallel), row-major, one process per rank (a grid of 1
  /// too calls the collectives): ranks along VramDialect::kDataAxis, then
  /// kTensorAxis; none for any other program.
  std::optional<llvm::SmallVector<int64_t>> grid;
  /// Of a pipeline stage's step (vram-pipeline-schedule): the micro-batches
  /// each data input holds, stacked on its first axis; 1 otherwise.
  int64_t microbatches = 1;
  bool isPipelineStage = false;
};

/// The signature of `func` in host terms. Every argument and result must be
/// a statically shaped tensor of a supported element type; anything else is
/// an error reported on `func`.
mlir::FailureOr<FunctionSignature> getFunctionSignature(mlir::func::FuncOp func);

/// Joins the group of `ranks` processes a per-rank program runs in (MPI's
/// world, through the collectives' runtime library, which the program's
/// JIT loads too) and returns this process's rank.
llvm::Expected<int64_t> joinCollectiveGroup(int64_t ranks);

/// Registers what the JIT needs on `registry`: the translations of the
/// builtin and LLVM dialects to LLVM IR.
void registerJitTranslations(mlir::DialectRegistry &registry);

class CompiledFunction {
public:
  /// JIT-compiles `module`, which vram-lower-to-cpu lowered with `entry` as
  /// its entry. `signature` is @entry's, read before lowering (lowering
  /// erases the unsigned integer types). Errors are reported on the module's
  /// context.
  static mlir::FailureOr<std::unique_ptr<CompiledFunction>>
  compile(mlir::ModuleOp module, llvm::StringRef entry,
          FunctionSignature signature);

  /// Calls the function. `arguments` must match the signature's arguments
  /// (kind and shape); the function writes its results into tensors this
  /// allocates, which it returns.
  /// A result the function computes in an argument's buffer (a parameter
  /// updated in place) is computed in a copy: `arguments` stay unchanged.
  llvm::Expected<llvm::SmallVector<HostTensor>>
  invoke(llvm::ArrayRef<HostTensor> arguments);

  const FunctionSignature &getSignature() const { return signature; }

  /// Returns the large blocks calls kept for the next one.
  ~CompiledFunction();

private:
  CompiledFunction(std::unique_ptr<mlir::ExecutionEngine> engine,
                   std::string entry, FunctionSignature signature,
                   llvm::SmallVector<int64_t> resultArguments)
      : engine(std::move(engine)), entry(std::move(entry)),
        signature(std::move(signature)),
        resultArguments(std::move(resultArguments)) {}

  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string entry;
  FunctionSignature signature;
  /// Per result of the signature, the argument whose buffer holds it after
  /// the call (vram-drop-argument-results), or -1 when it is an out-param.
  llvm::SmallVector<int64_t> resultArguments;
};

} // namespace vram

#endif // VRAM_RUNNER_JITRUNNER_H
