#!/usr/bin/env bash
# Fresh machine to first result: installs, builds, and plans the training
# step of the bundled example CNN into a memory budget.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh vram-opt
# Its Adam training step at batch 8 peaks at 1.63 MB; planned into 1.5 MB
# (a few activations recomputed, about 4% more compute time), the report
# starts with the plan.
./build/bin/vram-opt examples/small_cnn.onnx --batch=8 --train="optimizer=adam" \
  --budget=1.5MB --report
