#!/usr/bin/env bash
# The whole test suite (lit and unit tests) with every tool and library
# built under AddressSanitizer and UndefinedBehaviorSanitizer (clang-22), in
# ${SANITIZE_BUILD_DIR:-build-asan}: any sanitizer report fails the test that
# triggered it. .ci/run calls it after scripts/test.sh.
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
    -DLLVM_USE_SANITIZER="Address;Undefined"
fi
ninja -C "$build"
# Leaks count: the tools free what they allocate (the fuzzers check it too).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
