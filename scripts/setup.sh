#!/usr/bin/env bash
# Installs every Debian package vram-opt needs to build and test. Idempotent.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ git
  llvm-22-dev libmlir-22-dev mlir-22-tools clang-22 lld-22 libclang-rt-22-dev
  libomp-22-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libonnx-testdata python3-onnx python3-numpy
  libgtest-dev libopenblas-dev
  openmpi-bin libopenmpi-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# HiGHS, the planner's MILP solver, is not packaged by Debian bookworm: its
# PyPI wheel carries the library, headers and CMake files.
python3 -c "import highsbox" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check 'highsbox==1.15.1'
