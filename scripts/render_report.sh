#!/usr/bin/env bash
# Renders vram-opt's HTML memory report in headless Chromium and saves a
# screenshot, to check the page draws (run after scripts/build.sh; needs
# Debian's chromium package: apt-get install chromium).
#   scripts/render_report.sh MODEL PNG [vram-opt options...]
#   scripts/render_report.sh test/models/resnet50_train.onnx /tmp/r50.png --batch=64 --budget=700MiB
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1 png=$2
shift 2
html=$(mktemp --suffix=.html)
trap 'rm -f "$html"' EXIT
"${BUILD_DIR:-build}/bin/vram-opt" "$model" --report=html --report-file="$html" "$@"
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1150,620 --screenshot="$png" "file://$html" 2>/dev/null
echo "wrote $png"
