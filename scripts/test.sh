#!/usr/bin/env bash
# Fresh machine to test results: installs, builds everything, and runs all
# tests (lit and unit tests) under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
