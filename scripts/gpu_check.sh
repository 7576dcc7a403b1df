#!/usr/bin/env bash
# gpu_check.sh - runs models on the GPU and checks them against the CPU.
#
#   scripts/gpu_check.sh prepare DIR [LIST]  build, lower and run the CPU side
#   scripts/gpu_check.sh run DIR             run the GPU side (DIR/*/model.gpu)
#   scripts/gpu_check.sh compare DIR         compare and report (needs both)
#   scripts/gpu_check.sh [LIST]              all three, on a machine with both
#
# LIST (default scripts/gpu_check/models.txt) has one check per line:
# "name | model | vram-opt options"; an option "--budget=NN%" is NN% of the
# unplanned peak that vram-opt reports for the same step without a budget.
# GPU_CHECK_REPEAT (prepare, default 3) is how many timed calls follow the
# first; GPU_CHECK_TIMEOUT (run, default 120) the seconds each check gets.
#
# prepare needs LLVM/MLIR 22, the CUDA toolkit (ptxas) and a build of this
# project; run needs only the NVIDIA driver and DIR's executables and
# libraries (DIR/*.so, DIR/*/model.gpu) plus cuBLAS and cuDNN (found on the
# library path or in /usr/local/cuda/lib64), so the GPU can be on a machine with
# none of the toolchain: take those there, run, bring DIR/*/gpu.{out,err}
# back and compare. For each check:
#   - vram-opt imports (and trains, plans) the model; its JSON report gives
#     the analysed peak and, with a budget, the plan;
#   - scripts/gpu_check/harness.py wraps @main in a harness that makes every
#     input deterministically, calls the step, prints its results (checksums
#     of large ones) and the mean time of repeated calls;
#   - the CPU side runs it lowered with vram-lower-to-cpu under mlir-runner;
#   - the GPU side is lowered with vram-lower-to-gpu (fatbin), compiled ahead
#     of time with clang and linked against libvram_cuda_runtime.so and
#     libvram_gpu_libraries.so (its matmuls and convolutions: cuBLAS, cuDNN);
#   - run compares the results (relative difference <= 1e-3) and prints the
#     step time, the device bytes the runtime counted during the step, the
#     arena vram-static-arena laid out, the analysed peak and the budget.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
llvm=/usr/lib/llvm-22
export PATH=/usr/local/cuda/bin:$PATH

prepare() {
  local dir=$1 list=$2
  local build=${BUILD_DIR:-$root/build}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ ! -f "$build/build.ninja" ]; then
    cmake -G Ninja -S "$root" -B "$build" -DMLIR_DIR=$llvm/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=$llvm/bin/lit -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  ninja -C "$build" vram-opt vram_cuda_runtime vram_gpu_libraries \
    vram_cpu_kernels >/dev/null
  local opt=$build/bin/vram-opt
  cp "$build/lib/libvram_cuda_runtime.so" "$build/lib/libvram_gpu_libraries.so" \
    "$dir/"
  $llvm/bin/clang -O2 -shared -fPIC "$root/scripts/gpu_check/harness_support.c" \
    -o "$dir/libvram_check_support.so"
  local runner_libs=$dir/libvram_check_support.so,$llvm/lib/libmlir_c_runner_utils.so,$build/lib/libvram_cpu_kernels.so

  while IFS='|' read -r name model options <&3; do
    name=$(echo $name) model=$(echo $model)
    local work=$dir/$name
    mkdir -p "$work"
    echo "gpu_check: preparing $name" >&2
    # shellcheck disable=SC2206
    local flags=($options)
    local percent=""
    for i in "${!flags[@]}"; do
      if [[ ${flags[$i]} =~ ^--budget=([0-9.]+)%$ ]]; then
        percent=${BASH_REMATCH[1]}
        unset 'flags[i]'
      fi
    done
    if [ -n "$percent" ]; then
      local unplanned
      unplanned=$("$opt" "$root/$model" "${flags[@]}" --report=json </dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["peak"]["bytes"])')
      flags+=("--budget=$(python3 -c "print(int($unplanned * $percent / 100))")")
    fi
    # A CPU run with the same options is kept: the slow half of prepare.
    local reuse_cpu=""
    if [ -s "$work/cpu.out" ] && [ "$(cat "$work/options" 2>/dev/null)" = "${flags[*]}" ]; then
      reuse_cpu=1
    fi
    echo "${flags[*]}" >"$work/options"
    "$opt" "$root/$model" "${flags[@]}" --report=json --report-file="$work/report.json"
    "$opt" "$root/$model" "${flags[@]}" -o "$work/model.mlir" >"$work/plan.txt"

    if [ -z "$reuse_cpu" ]; then
      python3 "$root/scripts/gpu_check/harness.py" "$work/model.mlir" "$work/cpu.mlir" --repeat 0
      "$opt" "$work/cpu.mlir" --vram-lower-to-cpu -o "$work/cpu.ll.mlir"
      $llvm/bin/mlir-runner "$work/cpu.ll.mlir" -e main -entry-point-result=i32 -O3 \
        --shared-libs="$runner_libs" >"$work/cpu.out"
    fi

    python3 "$root/scripts/gpu_check/harness.py" "$work/model.mlir" "$work/gpu.mlir" --gpu \
      --repeat "${GPU_CHECK_REPEAT:-3}"
    "$opt" "$work/gpu.mlir" --vram-lower-to-gpu="format=fatbin" \
      --mlir-print-ir-after=vram-static-arena -o "$work/gpu.ll.mlir" 2>"$work/after-arena.mlir"
    # The arena vram-static-arena made in each function: "function bytes".
    awk 'match($0, /func\.func @[A-Za-z0-9_]+/) { name = substr($0, RSTART + 11, RLENGTH - 11) }
         match($0, /memref\.alloc\(\) \{alignment = [0-9]+ : i64\} : memref<[0-9]+xi8>/) {
           text = substr($0, RSTART, RLENGTH); sub(/.*memref</, "", text); sub(/xi8>/, "", text)
           print name, text }' "$work/after-arena.mlir" >"$work/arenas"
    $llvm/bin/mlir-translate --mlir-to-llvmir "$work/gpu.ll.mlir" -o "$work/gpu.ll"
    $llvm/bin/clang -O2 -c -Wno-override-module "$work/gpu.ll" -o "$work/gpu.o"
    $llvm/bin/clang "$work/gpu.o" -o "$work/model.gpu" -L"$dir" \
      -l:libvram_cuda_runtime.so -l:libvram_gpu_libraries.so \
      -l:libvram_check_support.so -Wl,-rpath,'$ORIGIN/..' \
      -Wl,-rpath,/usr/local/cuda/lib64 -Wl,--allow-shlib-undefined
    rm -f "$work"/{cpu.mlir,cpu.ll.mlir,gpu.mlir,gpu.ll.mlir,after-arena.mlir,gpu.ll,gpu.o,model.mlir}
  done 3< <(grep -vE '^\s*(#|$)' "$list")
}

run() {
  local dir=$1 status=0
  for work in "$dir"/*/; do
    [ -x "$work/model.gpu" ] || continue
    VRAM_RUNTIME_REPORT=1 timeout "${GPU_CHECK_TIMEOUT:-120}" "$work/model.gpu" >"$work/gpu.out" 2>"$work/gpu.err" ||
      { echo "gpu_check: $(basename "$work"): the GPU run failed:"; tail -5 "$work/gpu.err"; status=1; }
  done
  return $status
}

compare() {
  python3 "$root/scripts/gpu_check/compare.py" "$1"
}

case "${1:-}" in
  prepare) prepare "$2" "${3:-$root/scripts/gpu_check/models.txt}" ;;
  run) run "$2" ;;
  compare) compare "$2" ;;
  *)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    prepare "$work" "${1:-$root/scripts/gpu_check/models.txt}"
    run "$work" || true
    compare "$work"
    ;;
esac
