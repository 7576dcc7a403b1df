#!/usr/bin/env python3
"""Does the lowered program fit what the memory analysis promised? For each
training step: the analysis' peak without the arguments (parameters, state,
inputs, optimizer state: the caller's buffers), against the static arena
vram-static-arena packs the bufferized step into (vram-lower-to-buffers, as
vram-lower-to-gpu runs it) and that arena's max-live lower bound. Ratios at
or under 1 mean the generated code needs no more than the report says.

    bench/arena/lowered_vs_analysis.py [--build build] [MODEL:BATCH:TRAIN ...]
"""
import argparse
import json
import os
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
DEFAULT = [
    "examples/small_cnn.onnx:8:optimizer=adam",
    "test/models/resnet18.onnx:8:optimizer=adam",
    "test/models/kit/mobilenet_v2_train.ts14.onnx:8:optimizer=adamw",
]
ARGUMENTS = ("parameter", "state", "input", "optimizer_state")


def measure(vram_opt, model, batch, train, step):
    subprocess.run([vram_opt, model, f"--batch={batch}", f"--train={train}",
                    "-o", step], check=True)
    report = json.loads(subprocess.run(
        [vram_opt, step, "--report=json"], capture_output=True, text=True,
        check=True).stdout)
    peak = report["peak"]
    analysis = peak["bytes"] - sum(peak["by_category"][c] for c in ARGUMENTS)
    lowered = subprocess.run(
        [vram_opt, step, "--pass-pipeline=builtin.module(vram-lower-to-buffers,"
         "canonicalize,func.func(vram-static-arena{print-stats}))",
         "-o", os.devnull], capture_output=True, text=True, check=True)
    arena, buffers, max_live = map(int, re.search(
        r"arena (\d+) bytes for (\d+) buffers; max-live lower bound (\d+)",
        lowered.stderr).groups())
    return analysis, arena, max_live, buffers


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("steps", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    vram_opt = os.path.join(args.build, "bin", "vram-opt")
    print("%-32s %5s %-16s %15s %15s %7s %15s %7s %8s" % (
        "model", "batch", "train", "analysis", "arena", "ratio", "max-live",
        "ratio", "buffers"))
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.steps:
            model, batch, train = spec.split(":")
            analysis, arena, max_live, buffers = measure(
                vram_opt, os.path.join(REPO, model), int(batch), train,
                os.path.join(tmp, "step.mlir"))
            print("%-32s %5s %-16s %15d %15d %7.4f %15d %7.4f %8d" % (
                os.path.basename(model), batch, train, analysis, arena,
                arena / analysis, max_live, max_live / analysis, buffers))


if __name__ == "__main__":
    main()
