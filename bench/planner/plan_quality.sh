#!/bin/bash
# Plan quality on real graphs: builds the training step of each kit model
# (batch 8; the GPT-2-small-like model batch 1, seq 512) with vram-opt, then
# runs vram-planner-bench on it: the fast planner, recompute only and with
# the device's host link, at 90/70/50/30% of the unplanned peak and at the
# smallest budget it meets, against the interval-drop relaxation's proven
# lower bound on the recompute-only overhead.
#   bench/planner/plan_quality.sh [build dir] [train options] [HiGHS seconds]
# e.g. bench/planner/plan_quality.sh build "optimizer=adam precision=amp-bf16"
set -eu
build=${1:-build}
train=${2:-optimizer=momentum}
seconds=${3:-60}
kit=$(dirname "$0")/../../test/models/kit
steps=$(mktemp -d)
trap 'rm -rf "$steps"' EXIT
args=()
for name in resnet50_train mobilenet_v2_train efficientnet_b0_train \
  vgg16_eval densenet121_eval bert_base gpt2_small; do
  batch=8
  case "$name" in gpt2*) batch=1 ;; esac
  "$build/bin/vram-opt" "$kit/$name.ts14.onnx" --batch=$batch \
    --train="$train" -o "$steps/$name.mlir"
  args+=("--ir=$steps/$name.mlir")
done
echo "Training steps built with --train=\"$train\"."
"$build/bin/vram-planner-bench" --milp-max-ops=0 --milp-seconds="$seconds" \
  "${args[@]}"
