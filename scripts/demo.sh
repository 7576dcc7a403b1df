#!/usr/bin/env bash
# Fresh machine to first result: installs, builds, and runs vram-opt on the
# bundled example CNN.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh vram-opt
./build/bin/vram-opt examples/small_cnn.onnx --batch=32 --report --device=T4
