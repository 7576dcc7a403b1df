//===- ArenaBench.cpp - Arena packing quality and time on real graphs -----===//
//
// Builds packing instances from the buffers the memory analysis finds in
// imported ONNX models (arguments and constants excluded: the caller and
// the program image own them) and from the planner library's generated
// training graphs, packs each, checks the placement, and prints a table:
// arena / max-live lower bound, no-reuse size / arena, plain greedy-by-size
// / lower bound, and the solve time. A second table runs vram-static-arena
// itself on training steps bufferized by the real pipeline (vram-train,
// then vram-lower-to-buffers): the buffers a compiled step allocates.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Arena/ArenaPacker.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Import/ONNXImporter.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Planner/GraphSources.h"
#include "vram/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>

using namespace mlir;
using vram::arena::ArenaBuffer;

namespace {

llvm::cl::opt<int64_t> batch("batch", llvm::cl::desc("batch of the models"),
                             llvm::cl::init(64));
llvm::cl::opt<int64_t>
    trainBatch("train-batch",
               llvm::cl::desc("batch of the bufferized training steps"),
               llvm::cl::init(2));
llvm::cl::opt<uint64_t> alignment("alignment",
                                  llvm::cl::desc("alignment of every buffer"),
                                  llvm::cl::init(256));
llvm::cl::opt<unsigned>
    searchRounds("search-rounds",
                 llvm::cl::desc("local search rounds of the packer"),
                 llvm::cl::init(vram::arena::PackOptions().localSearchRounds));

struct Instance {
  std::string name;
  std::vector<ArenaBuffer> buffers;
};

/// `path` imported with its batch dimension bound to `batchSize`.
OwningOpRef<ModuleOp> importAtBatch(MLIRContext &context, llvm::StringRef path,
                                    int64_t batchSize) {
  vram::ONNXImportOptions options;
  options.batchSize = batchSize;
  return vram::importONNXFile(path, &context, options);
}

/// The device buffers of @main of an ONNX model: every buffer the memory
/// analysis finds, workspaces included, but arguments and constants.
std::optional<Instance> loadModel(MLIRContext &context, llvm::StringRef name,
                                  llvm::StringRef path) {
  OwningOpRef<ModuleOp> module = importAtBatch(context, path, batch);
  if (!module)
    return std::nullopt;
  auto main = module->lookupSymbol<func::FuncOp>("main");
  vram::MemoryAnalysis analysis(main);
  if (!analysis.isValid()) {
    llvm::errs() << path << ": some tensor sizes are unknown\n";
    return std::nullopt;
  }
  Instance instance{name.str(), {}};
  for (const vram::Buffer &buffer : analysis.getBuffers()) {
    if (!buffer.workspaceOf) {
      auto result = dyn_cast<OpResult>(buffer.root);
      if (!result || result.getOwner()->hasTrait<OpTrait::ConstantLike>())
        continue;
    }
    instance.buffers.push_back(
        {buffer.bytes, alignment, buffer.begin, buffer.end});
  }
  return instance;
}

/// The produced tensors of a planning graph, each live from its producer to
/// its last consumer (to the end when it must stay resident). With
/// `forwardOnly`, the backward ops are dropped: the inference graph.
Instance fromPlanningGraph(llvm::StringRef name,
                           const vram::planner::PlanningGraph &graph,
                           bool forwardOnly) {
  Instance instance{name.str(), {}};
  unsigned lastOp = 0;
  for (const vram::planner::PlanOp &op : graph.ops())
    if (!forwardOnly || !op.isBackward)
      ++lastOp;
  --lastOp;
  for (auto [id, tensor] : llvm::enumerate(graph.tensors())) {
    if (!tensor.producer || *tensor.producer > lastOp)
      continue;
    ArenaBuffer buffer{tensor.bytes, alignment, *tensor.producer,
                       *tensor.producer};
    for (vram::planner::OpId consumer : tensor.consumers)
      if (consumer <= lastOp)
        buffer.end = std::max(buffer.end, consumer);
    if (graph.mustStayResident(id))
      buffer.end = lastOp;
    instance.buffers.push_back(buffer);
  }
  return instance;
}

/// A CNN-like chain: activations halve in size every 8 layers, the pattern
/// of a convolutional network's stages.
vram::planner::PlanningGraph makeChain(unsigned depth) {
  std::vector<uint64_t> bytes;
  std::vector<double> costs;
  for (unsigned i = 0; i < depth; ++i) {
    bytes.push_back((uint64_t(64) << 20) >> (i / 8) | (i % 3) * 4096);
    costs.push_back(1.0);
  }
  return vram::planner::makeTrainingChain(bytes, costs);
}

std::string formatMiB(uint64_t bytes) {
  return llvm::formatv("{0:F1}", bytes / double(1 << 20)).str();
}

/// What vram-static-arena reported (its print-stats remark) for the one
/// arena of a bufferized step, and how long the pass took.
struct PassArena {
  uint64_t arena = 0, lowerBound = 0, naive = 0, buffers = 0;
  std::string method;
  double ms = 0;
};

/// Builds the training step of `path` (SGD with momentum) at --train-batch,
/// bufferizes it with the pipeline vram-lower-to-cpu and vram-lower-to-gpu
/// share, then times vram-static-arena on it. The numbers are read from the
/// pass's own remark, so they are what a compiled step allocates.
std::optional<PassArena> arenaOfTrainingStep(MLIRContext &context,
                                             llvm::StringRef path) {
  OwningOpRef<ModuleOp> module = importAtBatch(context, path, trainBatch);
  if (!module)
    return std::nullopt;
  PassManager lower(&context);
  vram::TrainPassOptions train;
  train.optimizer = "momentum";
  lower.addPass(vram::createTrainPass(train));
  vram::buildTensorToBufferPipeline(lower);
  // As vram-lower-to-gpu does before its arena: folds the copies
  // bufferization leaves between views.
  lower.addPass(createCanonicalizerPass());
  if (failed(lower.run(*module)))
    return std::nullopt;

  PassManager arenaPass(&context);
  vram::StaticArenaPassOptions arenaOptions;
  arenaOptions.alignment = alignment;
  arenaOptions.searchRounds = searchRounds;
  arenaOptions.printStats = true;
  arenaPass.addNestedPass<func::FuncOp>(
      vram::createStaticArenaPass(arenaOptions));
  SmallVector<std::string> remarks;
  std::optional<PassArena> result;
  {
    ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Remark)
        return failure(); // errors go to the default handler
      remarks.push_back(diag.str());
      return success();
    });
    auto start = std::chrono::steady_clock::now();
    if (failed(arenaPass.run(*module)))
      return std::nullopt;
    result.emplace();
    result->ms = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  }
  llvm::Regex stats("^arena ([0-9]+) bytes for ([0-9]+) buffers; max-live "
                    "lower bound ([0-9]+) bytes \\(ratio [0-9.]+\\), "
                    "([0-9]+) bytes without reuse; placed by (.*)$");
  SmallVector<llvm::StringRef> fields;
  if (remarks.size() != 1 || !stats.match(remarks.front(), &fields)) {
    llvm::errs() << path << ": expected one arena remark, got "
                 << remarks.size() << "\n";
    return std::nullopt;
  }
  fields[1].getAsInteger(10, result->arena);
  fields[2].getAsInteger(10, result->buffers);
  fields[3].getAsInteger(10, result->lowerBound);
  fields[4].getAsInteger(10, result->naive);
  result->method = fields[5].str();
  return result;
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "arena packing on real and generated graphs\n");
  // Everything the lowering pipeline creates, with the bufferization
  // models of the tensor, linalg and arith ops.
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<vram::ONNXDialect, vram::VramDialect>();
  MLIRContext context(registry);

  std::vector<Instance> instances;
  const std::pair<const char *, const char *> models[] = {
      {"resnet18 (inference)", "/test/models/resnet18.onnx"},
      {"resnet50 (train-mode export)", "/test/models/resnet50_train.onnx"},
      {"small_cnn (inference)", "/examples/small_cnn.onnx"},
  };
  for (auto [name, path] : models)
    if (std::optional<Instance> instance =
            loadModel(context, name, std::string(VRAM_SOURCE_DIR) + path))
      instances.push_back(std::move(*instance));
  vram::planner::PlanningGraph transformer =
      vram::planner::makeTransformerTrainingGraph(12, /*seed=*/1);
  instances.push_back(
      fromPlanningGraph("transformer 12L (inference)", transformer, true));
  instances.push_back(
      fromPlanningGraph("transformer 12L (training)", transformer, false));
  vram::planner::PlanningGraph chain = makeChain(64);
  instances.push_back(fromPlanningGraph("chain 64 (training)", chain, false));

  llvm::raw_ostream &os = llvm::outs();
  os << "batch " << batch << ", alignment " << alignment << " B, "
     << searchRounds << " search rounds\n\n";
  os << "| instance | buffers | lower bound MiB | arena MiB | arena / bound "
        "| greedy / bound | naive / arena | method | solve ms |\n"
     << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n";
  int status = 0;
  for (const Instance &instance : instances) {
    if (llvm::Error error = vram::arena::validateBuffers(instance.buffers)) {
      llvm::errs() << instance.name << ": " << llvm::toString(std::move(error))
                   << "\n";
      status = 1;
      continue;
    }
    vram::arena::PackOptions options;
    options.localSearchRounds = searchRounds;
    auto start = std::chrono::steady_clock::now();
    vram::arena::PackResult result =
        vram::arena::packArena(instance.buffers, options);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (llvm::Error error =
            vram::arena::verifyPlacement(instance.buffers, result.placement)) {
      llvm::errs() << instance.name << ": invalid placement: "
                   << llvm::toString(std::move(error)) << "\n";
      status = 1;
    }
    uint64_t arena = result.placement.arenaSize;
    os << "| " << instance.name << " | " << instance.buffers.size() << " | "
       << formatMiB(result.lowerBound) << " | " << formatMiB(arena) << " | "
       << llvm::format("%.4f", result.ratio()) << " | "
       << llvm::format("%.4f", result.lowerBound
                                   ? double(result.greedySize) / result.lowerBound
                                   : 1.0)
       << " | "
       << llvm::format("%.2f", arena ? double(result.naiveSize) / arena : 1.0)
       << " | " << result.method << " (" << result.searchRounds << " rounds) | "
       << llvm::format("%.1f", ms) << " |\n";
  }

  os << "\nvram-static-arena on training steps (SGD with momentum, batch "
     << trainBatch << ") bufferized by vram-lower-to-buffers\n\n";
  os << "| training step | placed buffers | lower bound MiB | arena MiB | "
        "arena / bound | naive / arena | method | pass ms |\n"
     << "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n";
  const std::pair<const char *, const char *> steps[] = {
      {"small_cnn", "/examples/small_cnn.onnx"},
      {"resnet18", "/test/models/resnet18.onnx"},
  };
  for (auto [name, path] : steps) {
    std::optional<PassArena> step =
        arenaOfTrainingStep(context, std::string(VRAM_SOURCE_DIR) + path);
    if (!step) {
      status = 1;
      continue;
    }
    os << "| " << name << " | " << step->buffers << " | "
       << formatMiB(step->lowerBound) << " | " << formatMiB(step->arena)
       << " | "
       << llvm::format("%.4f", step->lowerBound
                                   ? double(step->arena) / step->lowerBound
                                   : 1.0)
       << " | "
       << llvm::format("%.2f",
                       step->arena ? double(step->naive) / step->arena : 1.0)
       << " | " << step->method << " | " << llvm::format("%.1f", step->ms)
       << " |\n";
  }
  return status;
}
