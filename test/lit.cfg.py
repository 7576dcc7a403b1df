# lit configuration for vram-opt's tests.

import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "VRAM_OPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtext", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.vram_obj_root, "test")

config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%models", os.path.join(config.test_source_root, "models")))
config.substitutions.append(("%examples", os.path.join(config.test_source_root, "..", "examples")))
config.substitutions.append(("%vram_src_root", config.vram_src_root))
config.substitutions.append(("%vram_obj_root", config.vram_obj_root))
config.substitutions.append(("%cmake", config.cmake))
config.substitutions.append(("%cxx_compiler", config.cxx_compiler))
config.substitutions.append(("%cxx_flags", config.cxx_flags))
# ONNX's backend conformance tests, from Debian's libonnx-testdata.
config.substitutions.append(("%onnx_testdata", config.onnx_testdata_dir))
if os.path.isdir(config.onnx_testdata_dir):
    config.available_features.add("onnx-testdata")

# The fuzz targets link libFuzzer in the sanitizer build (scripts/sanitize.sh),
# which then fuzzes for a bounded time instead of replaying the corpora.
if config.vram_libfuzzer:
    config.available_features.add("libfuzzer")
# Sanitized binaries hold their source file names (for their reports).
if config.llvm_use_sanitizer:
    config.available_features.add("sanitizers")

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.vram_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["vram-opt", "vram-run", "vram-translate", "vram-fuzz-import", "vram-fuzz-driver",
     "vram-fuzz-graph", "vram-fuzz-options", "FileCheck", "not", "count"], tool_dirs)
llvm_config.with_environment("PATH", config.vram_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# lit runs tests in parallel already; OpenBLAS (vram-run's matmul and
# convolution kernels) would start a thread per core in each of them.
llvm_config.with_environment("OPENBLAS_NUM_THREADS", "1")

# GPU tests (test/GPU): ptxas checks what the pipeline emits; the CUDA runtime
# library, when built, is linked against lowered programs (never run here).
ptxas = "/usr/local/cuda/bin/ptxas"
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
vram_lib_dir = os.path.join(config.vram_obj_root, "lib")
config.substitutions.append(("%vram_lib_dir", vram_lib_dir))
if os.path.exists(os.path.join(vram_lib_dir, "libvram_cuda_runtime.so")):
    config.available_features.add("cuda-runtime")
if os.path.exists(os.path.join(vram_lib_dir, "libvram_gpu_libraries.so")):
    config.available_features.add("gpu-libraries")
if os.path.exists(os.path.join(vram_lib_dir, "libvram_collectives_nccl.so")):
    config.available_features.add("nccl-collectives")

# Per-rank programs (test/Parallel) run under Open MPI when the collectives'
# runtime was built: %mpirun N starts N processes on this machine, whatever
# its cores (oversubscribed, unbound), as root too (CI's containers).
mpirun = shutil.which("mpirun")
if mpirun and os.path.exists(os.path.join(vram_lib_dir, "libvram_collectives.so")):
    config.available_features.add("mpi")
    # Under the sanitizer job (scripts/sanitize.sh) the ranks run without
    # LeakSanitizer: Open MPI unloads its components at MPI_Finalize, and
    # their allocations, kept until then, show as leaks of an unknown module
    # that no suppression can name. Every other vram-run test checks leaks.
    # %rank_env runs one rank without mpirun (MPI's singleton) likewise.
    ranks_env, rank_env = "", ""
    if "detect_leaks=1" in os.environ.get("ASAN_OPTIONS", ""):
        no_leaks = "ASAN_OPTIONS=" + os.environ["ASAN_OPTIONS"].replace(
            "detect_leaks=1", "detect_leaks=0")
        ranks_env = " -x " + no_leaks
        rank_env = "env " + no_leaks
    config.substitutions.append(
        ("%mpirun", mpirun + " --oversubscribe --bind-to none -x OMP_NUM_THREADS=1"
         + ranks_env + " -np"))
    config.substitutions.append(("%rank_env", rank_env))
    llvm_config.with_environment("OMPI_ALLOW_RUN_AS_ROOT", "1")
    llvm_config.with_environment("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
