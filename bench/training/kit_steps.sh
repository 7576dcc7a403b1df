#!/bin/bash
# Builds the training step of every model of the kit (test/models/kit) with
# every optimizer and both update placements, and prints one table row per
# (model, optimizer, placement): peak bytes, parameters and optimizer state
# over all buffers (in-place updates: exactly the arguments' bytes) and the
# wall time of vram-opt. The default loss is cross-entropy (LM cross-entropy
# with int64 labels for [batch, seq, vocab] logits).
#   bench/training/kit_steps.sh [build dir] [model glob]
set -u
build=${1:-build}
glob=${2:-*}
kit=$(dirname "$0")/../../test/models/kit
printf '%-34s %-9s %-15s %16s %16s %16s %7s\n' model optimizer update peak \
  parameters optimizer_state seconds
for model in "$kit"/$glob.onnx; do
  name=$(basename "$model" .onnx)
  [ "$name" = llama7b ] && continue
  batch=8
  case "$name" in gpt2*) batch=1 ;; esac
  for optimizer in sgd momentum adam adamw; do
    for update in after-backward in-backward; do
      start=$(date +%s.%N)
      out=$("$build/bin/vram-opt" "$model" --batch=$batch \
        --train="optimizer=$optimizer update=$update" --report=json 2>&1)
      status=$?
      seconds=$(echo "$(date +%s.%N) - $start" | bc)
      if [ $status -ne 0 ]; then
        printf '%-34s %-9s %-15s %s\n' "$name" $optimizer $update \
          "FAILED: $(echo "$out" | grep -m1 error)"
        continue
      fi
      echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["totals"]
print("%-34s %-9s %-15s %16d %16d %16d %7.2f" % (sys.argv[1], sys.argv[2],
      sys.argv[3], d["peak"]["bytes"], t["parameter"], t["optimizer_state"],
      float(sys.argv[4])))' "$name" $optimizer $update "$seconds"
    done
  done
done
