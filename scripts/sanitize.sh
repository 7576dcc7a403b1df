#!/usr/bin/env bash
# The test suite with every tool and library built under AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer's coverage (clang-22), in
# ${SANITIZE_BUILD_DIR:-build-asan}: any sanitizer report or leak fails the
# test that triggered it, and the fuzz targets fuzz for a bounded time
# (test/Fuzz/fuzz-run.test) instead of replaying the corpora. .ci/run calls
# it after scripts/test.sh (docs/fuzzing.md, "Sanitizer job").
# Left out: the ONNX node tests at every opset (test/Execution/
# onnx-node-tests-opsets.test), most of the 21 minutes of tests in the one
# sanitized run that included them (they passed); their importer paths are
# what the fuzz run starts from.
# The code vram-run compiles and runs is not instrumented (the JIT emits it),
# but every buffer it allocates comes from the sanitized runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build-asan}

./scripts/setup.sh
if [[ ! -f "$build/build.ninja" ]]; then
  # LLVM's own switch: -fsanitize=address,undefined (without vptr and
  # function, which need RTTI the LLVM libraries lack), no recovery, and no
  # -z defs for shared libraries, whose sanitizer symbols the executable has.
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_SANITIZER="Address;Undefined" \
    -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
    -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DVRAM_LIBFUZZER=ON
fi
ninja -C "$build"
# Leaks count: the tools free what they allocate (the fuzzers check it too).
# No user poisoning: LLVM's BumpPtrAllocator poisons and unpoisons its slabs
# only in code compiled with ASan, which ours is and Debian's libMLIR is not,
# so memory our inlined copy poisoned and libMLIR's copy hands out reads as
# a use-after-poison (an MLIR attribute built in our code, then a string
# interned in libMLIR). Heap, stack and global checks are unaffected.
export ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
export LIT_FILTER_OUT=onnx-node-tests-opsets
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
