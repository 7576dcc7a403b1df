#!/usr/bin/env python3
"""Imports every model of the kit (test/models/kit: current PyTorch exports
through the TorchScript exporter at opsets 14 and 20 and the dynamo exporter
at opset 20, IR 7-10) and prints each inference peak next to the peak of the
same model's opset-14 export, with their ratio, and the same for the peak
less the persistent bytes the file stores (parameters and state at the
peak): exporters store different things (the TorchScript exporter unties a
language model's tied head into a second weight, keeps masks as constants),
while the computation, and so the rest of the peak, is the same.

Flags a pair more than 1% apart. Standard library only."""

import argparse
import json
import os
import subprocess
import sys


def peak(vram_opt, path):
    """(peak bytes, peak bytes less parameters and state), or (None, error)."""
    result = subprocess.run([vram_opt, path, "--report=json"],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        return None, lines[-1] if lines else f"exit {result.returncode}"
    report = json.loads(result.stdout)["peak"]
    persistent = (report["by_category"]["parameter"] +
                  report["by_category"]["state"])
    return (report["bytes"], report["bytes"] - persistent), ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vram-opt", required=True)
    parser.add_argument("--kit", required=True)
    args = parser.parse_args()
    files = sorted(f for f in os.listdir(args.kit) if f.endswith(".onnx"))
    models = sorted({f.split(".")[0] for f in files if ".ts14." in f})
    failures = 0
    for model in models:
        reference, error = peak(args.vram_opt, os.path.join(args.kit, f"{model}.ts14.onnx"))
        if reference is None:
            print(f"{model}.ts14: FAILED {error}")
            failures += 1
            continue
        print(f"{model}.ts14: peak {reference[0]} computation {reference[1]}")
        for variant in ("ts20", "dynamo"):
            name = f"{model}.{variant}.onnx"
            if name not in files:
                continue
            bytes_, error = peak(args.vram_opt, os.path.join(args.kit, name))
            if bytes_ is None:
                print(f"{model}.{variant}: FAILED {error}")
                failures += 1
                continue
            ratio = bytes_[0] / reference[0]
            computation = bytes_[1] / reference[1]
            flag = "" if abs(ratio - 1) <= 0.01 else " OVER 1%"
            if flag and abs(computation - 1) <= 0.01:
                flag = " OVER 1% in what the file stores"
            elif abs(computation - 1) > 0.01:
                flag = " OVER 1% in the computation"
            print(f"{model}.{variant}: peak {bytes_[0]} ratio {ratio:.4f}"
                  f" computation {bytes_[1]} ratio {computation:.4f}{flag}")
    print(f"failed imports: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
