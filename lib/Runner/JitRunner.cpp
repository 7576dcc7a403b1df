//===- JitRunner.cpp - JIT-compile and call an entry function -------------===//

#include "vram/Runner/JitRunner.h"
#include "vram/Dialect/Vram/VramDialect.h"
#include "vram/Dialect/Vram/VramOps.h"

#include "vram/Runner/KeptBlocks.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

using namespace mlir;
using namespace vram;

std::string TensorSpec::getTypeString() const {
  HostTensor shapeOnly;
  shapeOnly.kind = kind;
  shapeOnly.shape = shape;
  return shapeOnly.getTypeString();
}

static FailureOr<TensorSpec> getTensorSpec(func::FuncOp func, Type type,
                                           DictionaryAttr attrs,
                                           llvm::StringRef what,
                                           unsigned index) {
  TensorSpec spec;
  auto nameAttr =
      attrs ? attrs.getAs<StringAttr>("onnx.name") : StringAttr();
  spec.name = nameAttr ? nameAttr.str() : (what + llvm::Twine(index)).str();
  if (auto param = attrs
                       ? attrs.getAs<ParamKindAttr>(VramDialect::kParamAttrName)
                       : nullptr)
    spec.paramKind = param.getValue();
  if (auto flatOf =
          attrs ? attrs.getAs<TypeAttr>(VramDialect::kFlatOfAttrName) : nullptr)
    spec.flatOf.emplace(
        llvm::to_vector(cast<RankedTensorType>(flatOf.getValue()).getShape()));
  if (auto slice = attrs ? attrs.getAs<DictionaryAttr>(
                               VramDialect::kTensorSliceOfAttrName)
                         : nullptr) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(slice.getAs<TypeAttr>("type").getValue())
            .getShape();
    ArrayRef<int64_t> parts =
        slice.getAs<DenseI64ArrayAttr>("parts").asArrayRef();
    spec.tensorSliceOf =
        TensorSpec::TensorSlice{{shape.begin(), shape.end()},
                                slice.getAs<IntegerAttr>("axis").getInt(),
                                {parts.begin(), parts.end()}};
  }
  // A value the caller keeps in host memory is passed like any other: the
  // runner's tensors are host arrays.
  if (auto host = dyn_cast<HostTensorType>(type))
    type = host.getTensorType();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return func.emitError() << what << " " << index << " ('" << spec.name
                            << "') has type " << type
                            << "; only statically shaped tensors can be "
                               "passed to and from compiled code";
  std::optional<ElementKind> kind = getElementKind(tensor.getElementType());
  if (!kind)
    return func.emitError() << what << " " << index << " ('" << spec.name
                            << "') has unsupported element type "
                            << tensor.getElementType();
  spec.kind = *kind;
  spec.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  return spec;
}

FailureOr<FunctionSignature> vram::getFunctionSignature(func::FuncOp func) {
  FunctionSignature signature;
  FunctionType type = func.getFunctionType();
  for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
    FailureOr<TensorSpec> spec =
        getTensorSpec(func, argType, func.getArgAttrDict(i), "argument", i);
    if (failed(spec))
      return failure();
    signature.arguments.push_back(std::move(*spec));
  }
  if (auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
          func, StringAttr::get(func.getContext(), VramDialect::kRankGridName)))
    signature.grid = llvm::to_vector(grid.getShape());
  if (auto stage = func->getAttrOfType<DictionaryAttr>(
          VramDialect::kPipelineStageAttrName)) {
    signature.isPipelineStage = true;
    signature.microbatches = stage.getAs<IntegerAttr>("microbatches").getInt();
  }
  func.walk([&](UpdateOp update) {
    if (!update.getMaster())
      return;
    auto param = dyn_cast<BlockArgument>(update.getInits()[0]);
    auto master = dyn_cast<BlockArgument>(update.getInits()[1]);
    if (param && master && param.getOwner() == &func.front() &&
        master.getOwner() == &func.front())
      signature.arguments[master.getArgNumber()].masterOf =
          param.getArgNumber();
  });
  for (auto [i, resultType] : llvm::enumerate(type.getResults())) {
    FailureOr<TensorSpec> spec = getTensorSpec(
        func, resultType, func.getResultAttrDict(i), "result", i);
    if (failed(spec))
      return failure();
    signature.results.push_back(std::move(*spec));
  }
  return signature;
}

void vram::registerJitTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

/// A runtime library (`libvram_cpu_kernels.so`), found where the build and
/// the install put it: next to the library holding this code (libVramOpt),
/// or in ../lib from the executable it is linked into. The environment
/// variable `override` (VRAM_CPU_KERNELS) wins.
static std::string getRuntimeLibraryPath(llvm::StringRef file,
                                         const char *override) {
  if (const char *path = std::getenv(override))
    return path;
  static int anchor;
  Dl_info info;
  std::string holder;
  if (dladdr(&anchor, &info) && info.dli_fname &&
      llvm::sys::path::is_absolute(info.dli_fname))
    holder = info.dli_fname;
  else
    holder = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::StringRef directory = llvm::sys::path::parent_path(holder);
  SmallString<256> path;
  for (llvm::StringRef relative : {"", "../lib"}) {
    path = directory;
    llvm::sys::path::append(path, relative, file);
    if (llvm::sys::fs::exists(path))
      break;
  }
  return std::string(path);
}

static std::string getCollectivesPath() {
  return getRuntimeLibraryPath("libvram_collectives.so", "VRAM_COLLECTIVES");
}

llvm::Expected<int64_t> vram::joinCollectiveGroup(int64_t ranks) {
  std::string path = getCollectivesPath();
  // Loaded for good: the JIT loads the same library, and MPI stays up
  // until exit.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!library)
    return llvm::createStringError(
        llvm::Twine("a per-rank program needs the collectives' runtime (MPI), "
                    "which was not built or not found: ") +
        dlerror());
  auto rankOf = reinterpret_cast<int64_t (*)(int64_t)>(
      dlsym(library, "vramCollectiveRank"));
  if (!rankOf)
    return llvm::createStringError(path + " has no vramCollectiveRank");
  return rankOf(ranks);
}

/// Makes OpenBLAS use the GEMM kernels of the instruction set this CPU has.
/// Its runtime dispatch goes by CPU model number, and on one it does not
/// know (a recent Xeon, a virtual machine's generic model) it falls back to
/// its SSE3 "Prescott" kernels: 57 instead of 231 GFLOPS for a 1024^3 sgemm
/// on the build machine's AVX-512 Xeon. OpenBLAS reads OPENBLAS_CORETYPE once,
/// when it is loaded, so this must run before the JIT loads the CPU kernels'
/// library; a value the user set wins.
///
/// The kernels share out their work on OpenMP's threads, BLAS calls
/// included, so OpenBLAS runs on the calling thread: OpenBLAS's own pool
/// and OpenMP's, each spinning while it waited, took the cores from each
/// other (MobileNetV2 at batch 8: 0.11 to 0.38 s a call, depending on how
/// their waits fell). With one pool, OpenMP's default wait (spin a while,
/// then sleep) is the fastest: sleeping at once between loops cost
/// MobileNetV2 at batch 1 a quarter of its call (15.6 against 11.4 ms).
static void chooseCpuKernelSettings() {
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/0);
  if (std::getenv("OPENBLAS_CORETYPE"))
    return;
  const char *core = nullptr;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
#endif
  if (core)
    setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
}

FailureOr<std::unique_ptr<CompiledFunction>>
CompiledFunction::compile(ModuleOp module, llvm::StringRef entry,
                          FunctionSignature signature) {
  // Results left in argument buffers by in-place updates.
  SmallVector<int64_t> resultArguments(signature.results.size(), -1);
  if (auto lowered = module.lookupSymbol<LLVM::LLVMFuncOp>(entry))
    if (auto held = lowered->getAttrOfType<DenseI64ArrayAttr>(
            VramDialect::kResultsInArgumentsAttrName)) {
      ArrayRef<int64_t> indices = held.asArrayRef();
      if (indices.size() != resultArguments.size())
        return module.emitError()
               << "internal error: " << VramDialect::kResultsInArgumentsAttrName
               << " has " << indices.size() << " entries for "
               << resultArguments.size() << " results";
      resultArguments.assign(indices.begin(), indices.end());
    }
  // onnx.name / vram.param / vram.results_in_arguments mean nothing to LLVM
  // IR translation, which would warn about each; they were read already.
  module.walk([](LLVM::LLVMFuncOp llvmFunc) {
    llvmFunc->removeAttr(VramDialect::kResultsInArgumentsAttrName);
    auto func = cast<FunctionOpInterface>(llvmFunc.getOperation());
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      for (NamedAttribute attr : func.getArgAttrs(i))
        if (!attr.getName().strref().starts_with("llvm."))
          func.removeArgAttr(i, attr.getName());
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      for (NamedAttribute attr : func.getResultAttrs(i))
        if (!attr.getName().strref().starts_with("llvm."))
          func.removeResultAttr(i, attr.getName());
  });

  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    chooseCpuKernelSettings();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  ExecutionEngineOptions options;
  // O1: the loop nests arrive vectorized (vram-vectorize-linalg-ops), and
  // O3 took a third longer to compile for no run time measured (the kit
  // at batch 1 and 8: DenseNet-121 at batch 8 compiles in 2.7 s, 4.2 s at
  // O3).
  auto optimize = makeOptimizingTransformer(/*optLevel=*/1, /*sizeLevel=*/0,
                                            /*targetMachine=*/nullptr);
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // memref.copy of non-contiguous views calls memrefCopy from the first,
  // vram-call-library-kernels' calls go to the second.
  // A per-rank program's collectives go to the third.
  std::string cpuKernels =
      getRuntimeLibraryPath("libvram_cpu_kernels.so", "VRAM_CPU_KERNELS");
  SmallVector<llvm::StringRef, 3> runtime = {VRAM_C_RUNNER_UTILS_PATH,
                                             cpuKernels};
  std::string collectives;
  if (signature.grid) {
    collectives = getCollectivesPath();
    runtime.push_back(collectives);
  }
  options.sharedLibPaths = runtime;
  auto engine = ExecutionEngine::create(module, options);
  if (!engine)
    return module.emitError() << "JIT compilation failed: "
                              << llvm::toString(engine.takeError());
  // The arena and other large buffers are kept from call to call.
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto bind = [&](llvm::StringRef name, auto *function) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                                 llvm::JITSymbolFlags::Exported};
    };
    bind("malloc", &allocateKeptBlock);
    bind("free", &freeKeptBlock);
    return symbols;
  });
  // The JIT generates machine code when a symbol is first looked up: look
  // the entry up here, so that compiling is done (and timed) before the
  // first call rather than inside it.
  if (auto entryPoint = (*engine)->lookupPacked(entry); !entryPoint)
    return module.emitError() << "JIT compilation failed: "
                              << llvm::toString(entryPoint.takeError());
  return std::unique_ptr<CompiledFunction>(
      new CompiledFunction(std::move(*engine), entry.str(),
                           std::move(signature), std::move(resultArguments)));
}

CompiledFunction::~CompiledFunction() { releaseKeptBlocks(); }

/// A memref descriptor of the identity layout as the LLVM lowering lays it
/// out, in 8-byte words: allocated and aligned pointers, offset 0, then the
/// sizes and the row-major strides.
static std::vector<int64_t> getDescriptor(void *data,
                                          llvm::ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  std::vector<int64_t> words(3 + 2 * rank);
  words[0] = words[1] = reinterpret_cast<int64_t>(data);
  words[2] = 0;
  for (int64_t d = rank - 1, stride = 1; d >= 0; stride *= shape[d--]) {
    words[3 + d] = shape[d];
    words[3 + rank + d] = stride;
  }
  return words;
}

llvm::Expected<llvm::SmallVector<HostTensor>>
CompiledFunction::invoke(llvm::ArrayRef<HostTensor> arguments) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (arguments.size() != signature.arguments.size())
    return error("@" + entry + " takes " +
                 llvm::Twine(signature.arguments.size()) + " arguments, got " +
                 llvm::Twine(arguments.size()));
  for (auto [spec, tensor] : llvm::zip(signature.arguments, arguments))
    if (tensor.kind != spec.kind || tensor.shape != spec.shape)
      return error("argument '" + spec.name + "' is " + spec.getTypeString() +
                   "; got " + tensor.getTypeString());
  // Arguments the function updates in place get a copy, which becomes the
  // result it holds.
  llvm::DenseMap<int64_t, HostTensor> updatedArguments;
  for (int64_t argument : resultArguments)
    if (argument >= 0)
      updatedArguments.try_emplace(argument, arguments[argument]);
  // Every other result is written into a buffer of ours, passed after the
  // arguments (vram-lower-to-cpu's out-params).
  llvm::SmallVector<HostTensor> outputs;
  for (auto [spec, argument] : llvm::zip(signature.results, resultArguments))
    outputs.push_back(argument >= 0 ? HostTensor()
                                    : HostTensor(spec.kind, spec.shape));

  std::vector<std::vector<int64_t>> descriptors;
  for (auto [index, tensor] : llvm::enumerate(arguments)) {
    auto updated = updatedArguments.find(index);
    auto *data = updated != updatedArguments.end()
                     ? updated->second.bytes.data()
                     : const_cast<uint8_t *>(tensor.bytes.data());
    descriptors.push_back(getDescriptor(data, tensor.shape));
  }
  for (auto [output, argument] : llvm::zip(outputs, resultArguments))
    if (argument < 0)
      descriptors.push_back(getDescriptor(output.bytes.data(), output.shape));

  // vram-pack-entry-arguments' convention: @entry takes one pointer, to an
  // array of pointers to the descriptors (none without any); the
  // ExecutionEngine's packed wrapper takes a pointer to each argument.
  llvm::SmallVector<void *> pointers;
  for (std::vector<int64_t> &words : descriptors)
    pointers.push_back(words.data());
  void *array = pointers.data();
  llvm::SmallVector<void *> packed;
  if (!pointers.empty())
    packed.push_back(&array);
  if (llvm::Error callError = engine->invokePacked(entry, packed))
    return std::move(callError);

  for (auto [output, argument] : llvm::zip(outputs, resultArguments))
    if (argument >= 0)
      output = updatedArguments.find(argument)->second;
  return outputs;
}
