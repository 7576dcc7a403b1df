#!/usr/bin/env bash
# Copies the pass and dialect reference the build generated from the .td
# files (build/docs/) into docs/reference/, where test/Docs/reference.test
# expects it. Run after changing a pass's or an op's description or options.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
ninja -C "$build" vram-reference-docs
cp -r "$build/docs/." docs/reference/
