#!/usr/bin/env python3
"""vram-opt's training step against PyTorch on the kit's models: saved-for-
backward bytes against PyTorch eager's, and the unplanned AdamW step peak
against PyTorch's own peak over the same step with fused AdamW and against
the issue's yardstick (parameters + gradients + Adam state + saved + the
largest transient), and for
the transformers the saved bytes against AOTAutograd's min-cut partitioner (all
from bench/training/pytorch_training_reference.json, made by
scripts/pytorch_training_reference.py). Prints one table row per export.

    bench/training/compare_pytorch.py [--build build] [--reference JSON]
"""
import argparse
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.path.join(HERE, "..", "..", "test", "models", "kit")


def step_report(build, model, batch, update):
    out = subprocess.run(
        [os.path.join(build, "bin", "vram-opt"), model, f"--batch={batch}",
         f"--train=optimizer=adamw update={update}", "--report=json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[0]
    return json.loads(out.stdout), None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--reference",
                        default=os.path.join(HERE, "pytorch_training_reference.json"))
    args = parser.parse_args()
    with open(args.reference) as f:
        reference = json.load(f)
    print(f"PyTorch {reference['torch']} (eager, CPU, fp32); vram-opt "
          "--train=optimizer=adamw, unplanned")
    header = ("export", "saved", "torch saved", "ratio", "/min-cut", "peak",
              "peak in-bwd", "torch peak", "peak/torch", "torch needs",
              "peak/needs")
    print("%-30s %14s %14s %6s %8s %14s %14s %14s %10s %14s %10s" % header)
    for name, ref in reference["models"].items():
        for exporter in ("ts14", "ts20", "dynamo"):
            path = os.path.join(KIT, f"{name}.{exporter}.onnx")
            if not os.path.exists(path):
                continue
            report, error = step_report(args.build, path, ref["batch"],
                                        "after-backward")
            if error:
                print(f"{name}.{exporter:<20} FAILED: {error}")
                continue
            in_backward, _ = step_report(args.build, path, ref["batch"],
                                         "in-backward")
            saved = report["totals"]["saved_activation"]
            peak = report["peak"]["bytes"]
            peak_in = in_backward["peak"]["bytes"] if in_backward else 0
            min_cut = ("%8.3f" % (saved / ref["saved_min_cut"])
                       if "saved_min_cut" in ref else "%8s" % "-")
            print("%-30s %14d %14d %6.3f %s %14d %14d %14d %10.3f %14d %10.3f"
                  % (f"{name}.{exporter}", saved, ref["saved"],
                     saved / ref["saved"], min_cut, peak, peak_in,
                     ref["step_peak"], peak / ref["step_peak"],
                     ref["needs_adamw"], peak / ref["needs_adamw"]))


if __name__ == "__main__":
    main()
