#!/usr/bin/env bash
# Fuzzes the importer, the driver, the planner's graph reader and the
# drivers' option values (fuzz/)
# with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer
# (docs/fuzzing.md):
#   scripts/fuzz.sh [IMPORT_RUNS [DRIVER_RUNS [GRAPH_RUNS [OPTIONS_RUNS]]]]
#                             (default 1000000, 100000, 200000, 100000)
# Builds the targets with clang in build-fuzz/, seeds each from the committed
# corpus (fuzz/corpus/<target>) and the test suite's models (the graph
# reader: the Checkmate graphs in ../shared when present), runs it, and
# merges the inputs that add coverage back into fuzz/corpus/<target>.
# A crash, a hang (over 10 s on one input), a sanitizer report or a leak
# stops the run and leaves the input in build-fuzz/artifacts/; commit it
# under fuzz/corpus/<target>/ once fixed (test/Fuzz replays the corpora).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VRAM_FUZZ_BUILD_DIR:-$root/build-fuzz}
import_runs=${1:-1000000}
driver_runs=${2:-100000}
graph_runs=${3:-200000}
options_runs=${4:-100000}

"$root/scripts/setup.sh"
sanitize="-fsanitize=address,undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all"
cmake -G Ninja -S "$root" -B "$build" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DVRAM_LIBFUZZER=ON \
  -DCMAKE_C_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
  -DCMAKE_CXX_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
  -DCMAKE_EXE_LINKER_FLAGS="$sanitize" > /dev/null
ninja -C "$build" vram-fuzz-import vram-fuzz-driver vram-fuzz-graph \
  vram-fuzz-options

# Seeds: every small model of the test suite, text and binary.
seeds="$build/seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
while IFS= read -r -d '' model; do
  cp "$model" "$seeds/$(echo "${model#"$root"/}" | tr / _)"
done < <(find "$root/test" \( -name '*.onnx' -size -300k -o -name '*.onnxtext' \) -print0)
graph_seeds="$build/graph-seeds"
rm -rf "$graph_seeds" && mkdir -p "$graph_seeds"
cp "$root"/../shared/bench/checkmate-graphs/*.json "$graph_seeds"/ 2>/dev/null || true

mkdir -p "$build/artifacts"
# As in scripts/sanitize.sh: LLVM's allocator poisons memory only in our
# ASan-built copy of its code, not in libMLIR's.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_poisoning=0}
jobs=$(nproc)
# The fuzzers run in the background: stopping this script stops them too.
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM
# One libFuzzer process per core, each a share of the runs, on one corpus.
fuzz() {
  local target=$1 runs=$2 seeds=$3 max_len=$4 keep_kb=$5
  local corpus="$build/corpus/$target"
  mkdir -p "$corpus" "$root/fuzz/corpus/$target"
  echo "== vram-fuzz-$target: $runs runs in $jobs processes"
  local start=$SECONDS
  for job in $(seq 1 "$jobs"); do
    "$build/bin/vram-fuzz-$target" -runs=$(((runs + jobs - 1) / jobs)) \
      -seed="$job" -timeout=10 -rss_limit_mb=4096 -max_len="$max_len" \
      -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
      "$corpus" "$root/fuzz/corpus/$target" "$seeds" \
      > "$build/$target-$job.log" 2>&1 &
  done
  wait || true
  cat "$build/$target"-*.log | grep -E '^(==[0-9]+==|SUMMARY)' || true
  local executed
  executed=$(cat "$build/$target"-*.log |
    awk '/stat::number_of_executed_units/ {sum += $2} END {print sum + 0}')
  echo "   $executed executions in $((SECONDS - start)) s"
  # Into the committed corpus: the inputs under keep_kb that add coverage.
  local small="$build/small-$target"
  rm -rf "$small" && mkdir -p "$small"
  find "$corpus" -type f -size -"$keep_kb"k -exec cp {} "$small"/ \;
  "$build/bin/vram-fuzz-$target" -set_cover_merge=1 \
    "$root/fuzz/corpus/$target" "$small" > /dev/null 2>&1
}
# Inputs up to 16 KB for the importer (a small model's whole file; larger
# seeds are fuzzed in their first 16 KB) keep it near 1,000 runs a second
# under the sanitizers; the driver gets whole kit-sized test models.
fuzz import "$import_runs" "$seeds" 16384 16
fuzz driver "$driver_runs" "$seeds" 131072 32
fuzz graph "$graph_runs" "$graph_seeds" 65536 8
# Option values are short: the committed corpus is their seed.
fuzz options "$options_runs" "$root/fuzz/corpus/options" 256 1
if compgen -G "$build/artifacts/*" > /dev/null; then
  echo "findings: $(ls "$build/artifacts")"
  exit 1
fi
echo "no crash, hang, leak or sanitizer report"
