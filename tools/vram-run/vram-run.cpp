//===- vram-run.cpp - execute a model on CPU and check its outputs --------===//
//
// Imports an ONNX model (or reads MLIR), lowers it with vram-lower-to-cpu,
// JIT-compiles it and calls @main. Inputs come from ONNX backend-test files
// or the documented generator; parameters from the model's initializers or
// the same generator; outputs are printed or compared with expected files.
//
//===----------------------------------------------------------------------===//

#include "vram/Analysis/MemoryAnalysis.h"
#include "vram/Dialect/ONNX/ONNXDialect.h"
#include "vram/Dialect/ONNX/ONNXOps.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Import/NodeDiagnostics.h"
#include "vram/Import/ONNXImporter.h"
#include "vram/InitAll.h"
#include "vram/Pipelines/Passes.h"
#include "vram/Runner/GradientCheck.h"
#include "vram/Runner/JitRunner.h"
#include "vram/Runner/TensorProtoIO.h"
#include "vram/Support/ByteSize.h"
#include "vram/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Timer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <unistd.h>

using namespace mlir;
using namespace vram;

namespace {
llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                         llvm::cl::desc("<model>"),
                                         llvm::cl::Required);
llvm::cl::list<std::string>
    dimBindings("dim", llvm::cl::value_desc("name=value"),
                llvm::cl::desc("Bind an ONNX dynamic dimension by its "
                               "dim_param name (repeatable)"));
llvm::cl::opt<int64_t>
    batchSize("batch", llvm::cl::value_desc("N"),
              llvm::cl::desc("Bind the leading dimension of the first input"),
              llvm::cl::init(0));
llvm::cl::opt<std::string> inputsDir(
    "inputs", llvm::cl::value_desc("dir"),
    llvm::cl::desc("Directory with input_0.pb, input_1.pb, ... (TensorProto) "
                   "for the data arguments of @main, in order; without it, "
                   "float inputs are generated (--seed)"));
llvm::cl::opt<std::string> expectedDir(
    "expected", llvm::cl::value_desc("dir"),
    llvm::cl::desc("Directory with output_0.pb, ...: compare the results "
                   "(rtol 1e-3, atol 1e-7) and fail on a mismatch"));
llvm::cl::opt<double> relativeTolerance("rtol", llvm::cl::init(1e-3),
                           llvm::cl::desc("Relative tolerance of --expected"));
llvm::cl::opt<double> absoluteTolerance("atol", llvm::cl::init(1e-7),
                           llvm::cl::desc("Absolute tolerance of --expected"));
llvm::cl::opt<bool> printOutputs("print",
                                 llvm::cl::desc("Print every output"));
llvm::cl::opt<uint64_t> seed(
    "seed", llvm::cl::init(0),
    llvm::cl::desc("Seed of generated inputs and parameters (see "
                   "docs/execution.md)"));
llvm::cl::opt<bool> printTiming(
    "time", llvm::cl::desc("Print compile and run times on stderr"));
llvm::cl::opt<std::string> trainOptions(
    "train", llvm::cl::value_desc("options"), llvm::cl::ValueOptional,
    llvm::cl::desc("Run the training step vram-train builds from @main "
                   "(its options, e.g. \"loss=mse optimizer=none\"); the "
                   "labels argument is generated like the inputs"));
llvm::cl::opt<std::string> parallelOptions(
    "parallel", llvm::cl::value_desc("options"),
    llvm::cl::desc("With --train, run one rank's program of a parallel "
                   "step (vram-opt's --parallel, e.g. \"dp=2 zero=3 tp=2\") "
                   "under mpirun: each data-parallel rank takes its rows of "
                   "the global batch (--batch per rank), each rank its parts "
                   "of the generated parameters"));
llvm::cl::opt<unsigned> steps(
    "steps", llvm::cl::init(1),
    llvm::cl::desc("Call @main this many times on the same data, each call "
                   "taking the state the previous one returned (a result "
                   "named like an argument replaces it: parameters, "
                   "optimizer state, accumulated gradients); the last "
                   "call's results are printed and compared"));
llvm::cl::opt<unsigned> warmupCalls(
    "warmup", llvm::cl::init(0),
    llvm::cl::desc("Call @main this many times first, on the same data, "
                   "and drop the results: --time then times warm calls "
                   "(the first one faults its memory in)"));
llvm::cl::opt<bool> gradientCheck(
    "gradcheck",
    llvm::cl::desc("With --train=\"... optimizer=none\": compare every "
                   "returned gradient with central finite differences of the "
                   "loss and fail on a mismatch"));
llvm::cl::opt<unsigned> gradientCheckElements(
    "gradcheck-elements", llvm::cl::init(32),
    llvm::cl::desc("Elements checked per parameter (evenly strided)"));
} // namespace

/// Reports `message` as an error line and returns the exit status.
static int fail(const llvm::Twine &message) {
  llvm::errs() << inputFilename << ": error: " << message << "\n";
  return 1;
}

/// The importer takes from --inputs the values of inputs an op needs to
/// know its result's shape (Resize's scales, a Reduce's axes): a static
/// memory plan needs them at compile time.
static FailureOr<ONNXImportOptions> getImportOptions() {
  ONNXImportOptions options;
  options.inputValuesDirectory = inputsDir;
  for (const std::string &binding : dimBindings) {
    auto [name, value] = llvm::StringRef(binding).split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size <= 0) {
      fail("--dim expects name=value with a positive integer value, got '" +
           binding + "'");
      return failure();
    }
    options.dimBindings[name] = size;
  }
  if (batchSize.getNumOccurrences()) {
    if (batchSize <= 0) {
      fail("--batch expects a positive integer");
      return failure();
    }
    options.batchSize = batchSize;
  }
  return options;
}

static OwningOpRef<ModuleOp> loadModule(MLIRContext &context) {
  if (isONNXFileName(inputFilename)) {
    FailureOr<ONNXImportOptions> options = getImportOptions();
    if (failed(options))
      return nullptr;
    return importONNXFile(inputFilename, &context, *options);
  }
  return parseSourceFile<ModuleOp>(inputFilename, &context);
}

/// The generated-value range of an argument (docs/execution.md) by its role
/// in the model as imported (`vram.param`, none for data inputs), so a
/// parameter gets the same values whether a training step freezes it or
/// not: data inputs [-1, 1]; trainable tensors of rank >= 2 LeCun-uniform
/// bounds sqrt(3 / fan_in), fan_in = elements / leading dim, so activations
/// neither vanish nor blow up through deep nets; rank <= 1 (biases, scales)
/// [-1, 1]; state (running statistics) [0.5, 1.5], positive so a variance is
/// valid.
static std::pair<double, double>
getGeneratedRange(std::optional<ParamKind> importedKind,
                  ArrayRef<int64_t> shape) {
  if (importedKind == ParamKind::State)
    return {0.5, 1.5};
  if (!importedKind || shape.size() < 2 || shape[0] == 0)
    return {-1.0, 1.0};
  int64_t fanIn = 1;
  for (int64_t dim : llvm::drop_begin(shape))
    fanIn *= dim;
  double bound = std::sqrt(3.0 / std::max<int64_t>(fanIn, 1));
  return {-bound, bound};
}

/// Reads `<dir>/<prefix>_<i>.pb` for i = 0, 1, ... until one is missing.
static llvm::Expected<SmallVector<HostTensor>>
readNumberedTensors(llvm::StringRef dir, llvm::StringRef prefix) {
  if (!llvm::sys::fs::is_directory(dir))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "'" + dir + "' is not a directory");
  SmallVector<HostTensor> tensors;
  for (unsigned i = 0;; ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, prefix + "_" + llvm::Twine(i) + ".pb");
    if (!llvm::sys::fs::exists(path))
      return tensors;
    llvm::Expected<HostTensor> tensor = readTensorProtoFile(path);
    if (!tensor)
      return tensor.takeError();
    tensors.push_back(std::move(*tensor));
  }
}

/// Where this process is on the grid of a per-rank program.
struct GridPosition {
  int64_t dataRanks = 1, dataIndex = 0;
  int64_t tensorRanks = 1, tensorIndex = 0;

  /// World rank `rank` on the row-major `grid`: along each axis, its index
  /// among that axis' ranks (which are the product of the later axes'
  /// sizes apart).
  GridPosition(ArrayRef<int64_t> grid, int64_t rank) {
    auto place = [&](size_t axis, int64_t &ranks, int64_t &index) {
      if (axis >= grid.size())
        return;
      int64_t stride = 1;
      for (int64_t extent : grid.drop_front(axis + 1))
        stride *= extent;
      ranks = grid[axis];
      index = rank / stride % ranks;
    };
    place(VramDialect::kDataAxis, dataRanks, dataIndex);
    place(VramDialect::kTensorAxis, tensorRanks, tensorIndex);
  }
};

/// What argument `spec` of a per-rank program holds of the whole step's:
/// data inputs are `dataRanks` times as many rows (each data-parallel rank
/// takes its own), and a pipeline stage's hold its `microbatches` batches
/// stacked, which are consecutive rows of the whole batch; a parameter or
/// state split among tensor-parallel ranks or sharded flat is part of a
/// whole tensor.
static TensorSpec getGlobalSpec(const TensorSpec &spec, int64_t dataRanks,
                                int64_t microbatches) {
  TensorSpec global = spec;
  if (spec.tensorSliceOf) {
    global.shape.assign(spec.tensorSliceOf->shape.begin(),
                        spec.tensorSliceOf->shape.end());
  } else if (spec.flatOf) {
    global.shape = *spec.flatOf;
  } else if (!spec.paramKind && !global.shape.empty()) {
    if (microbatches > 1 && global.shape.size() >= 2) {
      global.shape[1] *= global.shape[0];
      global.shape.erase(global.shape.begin());
    }
    global.shape[0] *= dataRanks;
  }
  return global;
}

/// The tensor-parallel rank `index`'s part of `whole` (of `ranks`): along
/// the slice's axis, its chunk of every part.
static HostTensor getTensorSlice(const HostTensor &whole,
                                 const TensorSpec::TensorSlice &slice,
                                 int64_t ranks, int64_t index) {
  SmallVector<int64_t> shape(slice.shape.begin(), slice.shape.end());
  shape[slice.axis] /= ranks;
  HostTensor part(whole.kind, shape);
  size_t elementBytes = getElementByteSize(whole.kind);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < slice.axis; ++d)
    outer *= slice.shape[d];
  for (size_t d = slice.axis + 1; d < slice.shape.size(); ++d)
    inner *= slice.shape[d];
  int64_t rowBytes = inner * elementBytes;
  char *out = reinterpret_cast<char *>(part.bytes.data());
  const char *in = reinterpret_cast<const char *>(whole.bytes.data());
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = 0;
    for (int64_t size : slice.parts) {
      int64_t chunk = size / ranks;
      std::memcpy(out,
                  in +
                      ((o * slice.shape[slice.axis]) + offset + index * chunk) *
                          rowBytes,
                  chunk * rowBytes);
      out += chunk * rowBytes;
      offset += size;
    }
  }
  return part;
}

/// This rank's part of `global` (getGlobalSpec): its rows of a data input;
/// of a parameter or state, its tensor-parallel part, then of that its part
/// of the flat layout padded to a multiple of the data-parallel ranks (all
/// of it, or its slice).
static HostTensor getRankPart(HostTensor global, const TensorSpec &spec,
                              const GridPosition &position) {
  if (spec.tensorSliceOf)
    global = getTensorSlice(global, *spec.tensorSliceOf, position.tensorRanks,
                            position.tensorIndex);
  if (spec.shape == global.shape)
    return global;
  HostTensor part(spec.kind, spec.shape);
  size_t elementBytes = getElementByteSize(spec.kind);
  int64_t ranks = position.dataRanks;
  int64_t count = part.getNumElements(), total = global.getNumElements();
  int64_t offset = position.dataIndex * count;
  if (spec.flatOf) {
    int64_t padded = (total + ranks - 1) / ranks * ranks;
    offset = count == padded ? 0 : position.dataIndex * count;
  }
  int64_t copied = std::clamp<int64_t>(total - offset, 0, count);
  std::memcpy(part.bytes.data(), global.bytes.data() + offset * elementBytes,
              copied * elementBytes);
  return part;
}

/// Builds every argument of @main: data inputs from --inputs (or generated),
/// parameters from the model's initializers (or generated by their role
/// before --train, `importedKinds`). Of an ONNX model's inputs, those the
/// importer made constants have no argument, and their files are skipped.
static FailureOr<SmallVector<HostTensor>>
buildArguments(const FunctionSignature &signature,
               const llvm::StringMap<std::optional<ParamKind>> &importedKinds) {
  int64_t rank = 0;
  if (signature.grid) {
    llvm::Expected<int64_t> joined = joinCollectiveGroup(
        std::accumulate(signature.grid->begin(), signature.grid->end(),
                        int64_t(1), std::multiplies<int64_t>()));
    if (!joined) {
      fail(llvm::toString(joined.takeError()));
      return failure();
    }
    rank = *joined;
  }
  GridPosition position(signature.grid ? ArrayRef<int64_t>(*signature.grid)
                                       : ArrayRef<int64_t>(),
                        rank);
  std::optional<SmallVector<HostTensor>> inputs;
  if (!inputsDir.empty()) {
    auto read = readNumberedTensors(inputsDir, "input");
    if (!read) {
      fail("--inputs: " + llvm::toString(read.takeError()));
      return failure();
    }
    inputs = std::move(*read);
  }
  std::optional<ModelInitializers> initializers;
  if (isONNXFileName(inputFilename)) {
    auto read = readModelInitializers(inputFilename);
    if (!read) {
      fail(llvm::toString(read.takeError()));
      return failure();
    }
    initializers = std::move(*read);
  }

  // The files of model inputs the importer made constants belong to no
  // argument: data arguments take the others, in order.
  ArrayRef<std::string> inputNames =
      initializers ? ArrayRef<std::string>(initializers->inputNames)
                   : ArrayRef<std::string>();
  llvm::StringSet<> argumentNames;
  for (const TensorSpec &spec : signature.arguments)
    argumentNames.insert(spec.name);
  auto isBound = [&](const std::string &name) {
    return !argumentNames.contains(name);
  };
  size_t boundFiles = llvm::count_if(inputNames, isBound);
  auto nextFile = [&, file = size_t(0)]() mutable {
    while (file < inputNames.size() && isBound(inputNames[file]))
      ++file;
    return file++;
  };
  SmallVector<HostTensor> arguments;
  unsigned dataIndex = 0, generatedParams = 0, params = 0;
  std::string missingReason;
  for (auto [index, rankSpec] : llvm::enumerate(signature.arguments)) {
    // Everything is made as the whole step's tensor, then cut to this
    // rank's part: the ranks of a data-parallel run see the data of one
    // big batch and the same parameters.
    TensorSpec spec =
        getGlobalSpec(rankSpec, position.dataRanks, signature.microbatches);
    auto push = [&, &rankSpec = rankSpec](HostTensor tensor) {
      arguments.push_back(getRankPart(std::move(tensor), rankSpec, position));
    };
    if (!spec.paramKind) {
      ++dataIndex;
      size_t position = nextFile();
      if (inputs) {
        if (position >= inputs->size()) {
          fail("--inputs: no input_" + llvm::Twine(position) +
               ".pb for argument '" + spec.name + "' (" +
               spec.getTypeString() + ")");
          return failure();
        }
        HostTensor &tensor = (*inputs)[position];
        if (tensor.kind != spec.kind || tensor.shape != spec.shape) {
          fail("--inputs: input_" + llvm::Twine(position) + ".pb is " +
               tensor.getTypeString() + " but argument '" + spec.name +
               "' is " + spec.getTypeString());
          return failure();
        }
        push(std::move(tensor));
        continue;
      }
      if (!isFloatingPoint(spec.kind)) {
        fail("argument '" + spec.name + "' (" + spec.getTypeString() +
             ") is not floating-point: give its values with --inputs");
        return failure();
      }
      HostTensor tensor(spec.kind, spec.shape);
      fillUniform(tensor, seed, index, -1.0, 1.0);
      push(std::move(tensor));
      continue;
    }

    ++params;
    if (initializers) {
      auto it = initializers->tensors.find(spec.name);
      if (it != initializers->tensors.end()) {
        HostTensor &tensor = it->second;
        // A step in fp16/bf16 (--train precision) takes its parameters in
        // that type: the stored values are rounded to it.
        if (tensor.kind != spec.kind && tensor.shape == spec.shape &&
            isFloatingPoint(tensor.kind) && isFloatingPoint(spec.kind)) {
          HostTensor rounded(spec.kind, spec.shape);
          for (int64_t i = 0, e = tensor.getNumElements(); i < e; ++i)
            rounded.setFromDouble(i, tensor.getAsDouble(i));
          tensor = std::move(rounded);
        }
        if (tensor.kind != spec.kind || tensor.shape != spec.shape) {
          fail("initializer '" + spec.name + "' is " +
               tensor.getTypeString() + " but its argument is " +
               spec.getTypeString());
          return failure();
        }
        push(std::move(tensor));
        continue;
      }
      auto missing = initializers->missing.find(spec.name);
      if (missing != initializers->missing.end() && missingReason.empty())
        missingReason = missing->second;
    }
    if (!isFloatingPoint(spec.kind)) {
      fail("parameter '" + spec.name + "' (" + spec.getTypeString() +
           ") has no data and is not floating-point: integer tables cannot "
           "be generated");
      return failure();
    }
    // Master weights start as the parameter they are the f32 copy of (an
    // earlier argument, this rank's part of it as they are).
    if (spec.masterOf && *spec.masterOf < arguments.size()) {
      HostTensor master(rankSpec.kind, rankSpec.shape);
      const HostTensor &param = arguments[*spec.masterOf];
      for (int64_t i = 0, e = master.getNumElements(); i < e; ++i)
        master.setFromDouble(i, param.getAsDouble(i));
      arguments.push_back(std::move(master));
      continue;
    }
    HostTensor tensor(spec.kind, spec.shape);
    // Optimizer state starts at zero, as a fresh optimizer's does (step 0,
    // no momentum, no moments), and so do accumulated gradients.
    if (spec.paramKind == ParamKind::OptimizerState ||
        spec.paramKind == ParamKind::Gradient) {
      push(std::move(tensor));
      continue;
    }
    auto imported = importedKinds.find(spec.name);
    auto [low, high] = getGeneratedRange(
        imported == importedKinds.end() ? spec.paramKind : imported->second,
        spec.shape);
    fillUniform(tensor, seed, index, low, high);
    push(std::move(tensor));
    ++generatedParams;
  }
  // A pipeline stage reads the files of the inputs it has, of the whole
  // step's: the others' are for other stages.
  size_t expectedFiles = dataIndex + boundFiles;
  if (inputs && expectedFiles < inputs->size() && !signature.isPipelineStage) {
    fail("--inputs: " + llvm::Twine(inputs->size()) + " input files for " +
         llvm::Twine(expectedFiles) + " inputs");
    return failure();
  }
  if (generatedParams)
    llvm::errs() << inputFilename << ": note: " << generatedParams << " of "
                 << params << " parameters have no data"
                 << (missingReason.empty() ? "" : " (" + missingReason + ")")
                 << "; generated with seed " << seed << "\n";
  return arguments;
}

/// --parallel's options with this process's pipeline stage added when they
/// have `pp=` and no `stage=`: the pipeline axis is the grid's last, so
/// under mpirun the stage is the world rank modulo the stages (the rank as
/// the launcher's environment gives it; 0 without one).
static std::string withPipelineStage(llvm::StringRef options) {
  SmallVector<llvm::StringRef> words;
  options.split(words, ' ', -1, /*KeepEmpty=*/false);
  int64_t stages = 0;
  for (llvm::StringRef word : words) {
    if (word.starts_with("stage="))
      return options.str();
    if (word.consume_front("pp="))
      (void)word.getAsInteger(10, stages);
  }
  if (stages < 1)
    return options.str();
  int64_t worldRank = 0;
  for (const char *variable :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char *value = std::getenv(variable)) {
      (void)llvm::StringRef(value).getAsInteger(10, worldRank);
      break;
    }
  return (options + " stage=" + llvm::Twine(worldRank % stages)).str();
}

/// Whether @main fits this machine's memory: its peak (the memory analysis,
/// as `vram-opt --report` prints it) against the physical memory, checked
/// before anything is allocated rather than dying in the allocator.
static LogicalResult checkHostMemory(func::FuncOp main) {
  MemoryAnalysis analysis(main);
  // Unsized values: lowering refuses them with its own error.
  if (!analysis.isValid())
    return success();
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return success();
  uint64_t available = uint64_t(pages) * uint64_t(pageSize);
  if (analysis.getPeakBytes() <= available)
    return success();
  fail("@main needs " + formatExactBytes(analysis.getPeakBytes()) +
       " bytes at its peak (vram-opt --report), more than this machine's " +
       formatExactBytes(available) + " bytes of memory");
  return failure();
}

/// The extent of each component of an index that `user` reads from
/// `indices` (one for Gather and ScatterElements, k for ScatterND's
/// k-tuples), or none when `user` does not read `indices` as indices.
static SmallVector<int64_t> indexedExtents(Operation *user, Value indices) {
  auto dimOf = [](Value data, int64_t axis) {
    auto type = cast<RankedTensorType>(data.getType());
    return type.getDimSize(axis < 0 ? axis + type.getRank() : axis);
  };
  if (auto gather = dyn_cast<ONNXGatherOp>(user);
      gather && gather.getIndices() == indices)
    return {dimOf(gather.getData(), gather.getAxis())};
  if (auto scatter = dyn_cast<ONNXScatterElementsOp>(user);
      scatter && scatter.getIndices() == indices)
    return {dimOf(scatter.getData(), scatter.getAxis())};
  if (auto scatter = dyn_cast<ONNXScatterNDOp>(user);
      scatter && scatter.getIndices() == indices) {
    SmallVector<int64_t> extents;
    int64_t k = cast<RankedTensorType>(indices.getType()).getShape().back();
    for (int64_t axis = 0; axis < k; ++axis)
      extents.push_back(dimOf(scatter.getData(), axis));
    return extents;
  }
  return {};
}

/// Index inputs (token ids into an embedding, ...) in range: ONNX makes an
/// index outside [-extent, extent) an error, which the generated code can
/// only clamp, so it is reported here, naming the input and the node.
static LogicalResult checkIndexArguments(func::FuncOp main,
                                         ArrayRef<HostTensor> arguments) {
  if (arguments.size() != main.getNumArguments())
    return success();
  for (auto [argument, tensor] : llvm::zip(main.getArguments(), arguments))
    for (Operation *user : argument.getUsers()) {
      SmallVector<int64_t> extents = indexedExtents(user, argument);
      for (int64_t i = 0; !extents.empty() && i < tensor.getNumElements();
           ++i) {
        int64_t index = tensor.getAsInt(i);
        int64_t extent = extents[i % extents.size()];
        if (index >= -extent && index < extent)
          continue;
        auto name = main.getArgAttrOfType<StringAttr>(argument.getArgNumber(),
                                                      "onnx.name");
        fail("input '" + (name ? name.getValue() : llvm::StringRef("?")) +
             "' holds index " + llvm::Twine(index) + " (element " +
             llvm::Twine(i) + "), out of range for an axis of " +
             llvm::Twine(extent) + " elements at " +
             user->getName().getStringRef() + " '" + getOpName(user) + "'");
        return failure();
      }
    }
  return success();
}

/// The next call's arguments: each result named like an argument (the
/// step's updated parameters and state) replaces it.
static void feedBackState(const FunctionSignature &signature,
                          ArrayRef<HostTensor> outputs,
                          SmallVectorImpl<HostTensor> &arguments) {
  for (auto [result, output] : llvm::zip(signature.results, outputs))
    for (auto [argument, value] : llvm::zip(signature.arguments, arguments))
      if (argument.name == result.name && argument.kind == result.kind &&
          argument.shape == result.shape)
        value = output;
}

/// --gradcheck checks the gradients of the data inputs too (as PyTorch's
/// gradcheck does): every floating-point argument of @main that is not a
/// parameter becomes a trainable one, so a test model needs no weights.
static void differentiateDataInputs(func::FuncOp main) {
  for (BlockArgument arg : main.getArguments())
    if (!getParamKind(main, arg.getArgNumber()) &&
        isa<FloatType>(getElementTypeOrSelf(arg.getType())))
      setParamKind(main, arg.getArgNumber(), ParamKind::Trainable);
}

/// --gradcheck: one line per parameter; fails when any is out of tolerance.
static int runGradientCheck(CompiledFunction &step,
                            ArrayRef<HostTensor> arguments) {
  GradientCheckOptions options;
  options.maxElementsPerParameter = gradientCheckElements;
  auto checks = checkGradients(step, arguments, options);
  if (!checks)
    return fail("--gradcheck: " + llvm::toString(checks.takeError()));
  int status = 0;
  for (const ParameterGradientCheck &check : *checks) {
    llvm::outs() << (check.passed ? "ok" : "MISMATCH") << " gradient of '"
                 << check.parameter << "': " << check.elementsChecked
                 << " elements, max abs error "
                 << llvm::format("%.3g", check.maxAbsoluteError)
                 << ", max rel error "
                 << llvm::format("%.3g", check.maxRelativeError) << " (h "
                 << llvm::format("%g", check.step) << ", rtol "
                 << llvm::format("%g", check.tolerance.rtol) << ", atol "
                 << llvm::format("%g", check.tolerance.atol) << ")\n";
    if (check.passed)
      continue;
    std::string message;
    llvm::raw_string_ostream(message)
        << "gradient of '" << check.parameter << "' element "
        << check.worstIndex << ": analytic "
        << llvm::format("%.9g", check.worstAnalytic) << ", finite difference "
        << llvm::format("%.9g", check.worstNumeric);
    status = fail(message);
  }
  return status;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "vram-run: execute a model on CPU and check its outputs\n");

  DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registerAllExtensions(registry);
  // Planned programs (vram.offload / vram.prefetch) run like any other.
  vram::registerAllDialects(registry);
  registerJitTranslations(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // A model's errors name its nodes; MLIR input keeps file:line:col.
  llvm::SourceMgr sourceMgr;
  std::optional<SourceMgrDiagnosticHandler> mlirDiagnostics;
  std::optional<NodeDiagnosticPrinter> nodeDiagnostics;
  if (isONNXFileName(inputFilename))
    nodeDiagnostics.emplace(context);
  else
    mlirDiagnostics.emplace(sourceMgr, &context);

  llvm::TimerGroup timers("vram-run", "vram-run phases");
  OwningOpRef<ModuleOp> module = loadModule(context);
  if (!module)
    return 1;
  auto main = module->lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return fail("the module has no func.func @main with a body");
  FailureOr<FunctionSignature> signature = getFunctionSignature(main);
  if (failed(signature))
    return 1;
  // The role of every argument before a training step rewrites them.
  llvm::StringMap<std::optional<ParamKind>> importedKinds;
  for (const TensorSpec &spec : signature->arguments)
    importedKinds[spec.name] = spec.paramKind;
  if (trainOptions.getNumOccurrences()) {
    if (gradientCheck)
      differentiateDataInputs(main);
    PassManager pm(&context);
    std::string rankOptions = withPipelineStage(parallelOptions);
    if (failed(addTrainingStepPasses(
            pm, trainOptions,
            parallelOptions.getNumOccurrences()
                ? std::optional<llvm::StringRef>(rankOptions)
                : std::nullopt,
            [](const llvm::Twine &message) { fail(message); })))
      return 1;
    if (failed(pm.run(*module)))
      return 1;
    main = module->lookupSymbol<func::FuncOp>("main");
    signature = getFunctionSignature(main);
    if (failed(signature))
      return 1;
  } else if (gradientCheck) {
    return fail("--gradcheck needs --train=\"... optimizer=none\"");
  } else if (parallelOptions.getNumOccurrences()) {
    return fail("--parallel needs --train: it shards the training step");
  }
  if (steps == 0)
    return fail("--steps expects a positive integer");
  if (failed(checkHostMemory(main)))
    return 1;
  FailureOr<SmallVector<HostTensor>> arguments =
      buildArguments(*signature, importedKinds);
  if (failed(arguments) || failed(checkIndexArguments(main, *arguments)))
    return 1;

  llvm::Timer compileTimer("compile", "lower and JIT-compile", timers);
  compileTimer.startTimer();
  PassManager lowering(&context);
  buildLowerToCPUPipeline(lowering, "main");
  FailureOr<std::unique_ptr<CompiledFunction>> compiled = failure();
  if (succeeded(lowering.run(*module)))
    compiled = CompiledFunction::compile(*module, "main", *signature);
  compileTimer.stopTimer();
  if (failed(compiled)) {
    timers.clear(); // Times are printed with --time only.
    return 1;
  }
  if (gradientCheck) {
    timers.clear();
    return runGradientCheck(**compiled, *arguments);
  }
  const FunctionSignature &sig = (*compiled)->getSignature();
  for (unsigned call = 0; call < warmupCalls; ++call)
    if (auto warm = (*compiled)->invoke(*arguments); !warm) {
      timers.clear();
      return fail(llvm::toString(warm.takeError()));
    }
  llvm::Timer runTimer("run", "call @main", timers);
  runTimer.startTimer();
  auto outputs = (*compiled)->invoke(*arguments);
  for (unsigned step = 1; step < steps && outputs; ++step) {
    feedBackState(sig, *outputs, *arguments);
    outputs = (*compiled)->invoke(*arguments);
  }
  runTimer.stopTimer();
  if (!outputs) {
    timers.clear();
    return fail(llvm::toString(outputs.takeError()));
  }
  if (printTiming)
    llvm::errs() << inputFilename << ": compile "
                 << llvm::format("%.3f",
                                 compileTimer.getTotalTime().getWallTime())
                 << " s, run "
                 // Microseconds: small models run a call in under one.
                 << llvm::format("%.6f", runTimer.getTotalTime().getWallTime())
                 << " s\n";
  timers.clear();

  if (printOutputs) {
    for (auto [i, output] : llvm::enumerate(*outputs)) {
      llvm::outs() << "output " << i << " '" << sig.results[i].name << "': ";
      printTensor(output, llvm::outs());
    }
  }
  if (expectedDir.empty())
    return 0;
  auto expected = readNumberedTensors(expectedDir, "output");
  if (!expected)
    return fail("--expected: " + llvm::toString(expected.takeError()));
  if (expected->size() != outputs->size())
    return fail("--expected: " + llvm::Twine(expected->size()) +
                " output files for " + llvm::Twine(outputs->size()) +
                " results of @main");
  Tolerance tolerance{relativeTolerance, absoluteTolerance};
  int status = 0;
  for (auto [i, output] : llvm::enumerate(*outputs)) {
    std::optional<std::string> mismatch =
        compareTensors(output, (*expected)[i], tolerance);
    if (mismatch)
      status = fail("output " + llvm::Twine(i) + " '" + sig.results[i].name +
                    "' does not match output_" + llvm::Twine(i) +
                    ".pb: " + *mismatch);
  }
  if (!status)
    llvm::outs() << "all " << outputs->size() << " outputs match (rtol "
                 << llvm::format("%g", relativeTolerance.getValue())
                 << ", atol "
                 << llvm::format("%g", absoluteTolerance.getValue()) << ")\n";
  return status;
}
