#!/bin/bash
# How lowering and JIT compile time grow with a program's length: chains of
# N elementwise ops (each op's result feeds the next) through
# `vram-opt --emit=llvm` (the CPU pipeline) and `vram-run` (that pipeline,
# then LLVM at O1 in the JIT, then one run). Time linear in N means the
# seconds per 1,000 ops stay flat down a column. One row per (chain, N):
#   bench/lowering/chain_scaling.sh [build dir] [sizes for --emit=llvm] [sizes for vram-run]
# Chains: "relu" (x_i = Relu(x_i-1)), "add" (x_i = Add(x_i-1, x_i-1)),
# "fan-out" (x_i = Add(x_i-1, x0): one value with N uses), "results"
# (x_i = Relu(x_i-1), every x_i a result of the program: N results).
set -u
build=${1:-build}
emit_sizes=${2:-"1000 3000 9000"}
run_sizes=${3:-"300 1000 3000"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

chain() { # kind n
  local kind=$1 n=$2 i prev
  echo '<ir_version: 8, opset_import: ["" : 17]>'
  if [ "$kind" = results ]; then
    echo -n 'chain (float[4,16] x0) => (float[4,16] x1'
    for ((i = 2; i <= n; i++)); do echo -n ", float[4,16] x$i"; done
    echo ') {'
    for ((i = 1; i <= n; i++)); do echo "  x$i = Relu(x$((i - 1)))"; done
    echo '}'
    return
  fi
  echo 'chain (float[4,16] x0) => (float[4,16] y) {'
  for ((i = 1; i <= n; i++)); do
    prev=x$((i - 1))
    out=x$i
    [ "$i" = "$n" ] && out=y
    case $kind in
    relu) echo "  $out = Relu($prev)" ;;
    add) echo "  $out = Add($prev, $prev)" ;;
    fan-out) echo "  $out = Add($prev, x0)" ;;
    esac
  done
  echo '}'
}

seconds() { # command...
  local start status
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  status=$?
  [ $status -ne 0 ] && { echo "failed($status)"; return; }
  printf "%.2f" "$(echo "$(date +%s.%N) - $start" | bc)"
}

printf '%-8s %-14s %7s %9s %14s\n' chain command ops seconds 's/1000 ops'
for kind in relu add fan-out results; do
  for n in $emit_sizes; do
    chain $kind "$n" > "$work/chain.onnxtext"
    s=$(seconds "$build/bin/vram-opt" "$work/chain.onnxtext" --emit=llvm -o /dev/null)
    printf '%-8s %-14s %7d %9s %14s\n' $kind "--emit=llvm" "$n" "$s" \
      "$(echo "scale=2; $s * 1000 / $n" | bc 2>/dev/null)"
  done
  for n in $run_sizes; do
    chain $kind "$n" > "$work/chain.onnxtext"
    s=$(seconds "$build/bin/vram-run" "$work/chain.onnxtext")
    printf '%-8s %-14s %7d %9s %14s\n' $kind vram-run "$n" "$s" \
      "$(echo "scale=2; $s * 1000 / $n" | bc 2>/dev/null)"
  done
done
