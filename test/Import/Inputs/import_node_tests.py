#!/usr/bin/env python3
"""Imports every ONNX backend node-test model and classifies the result.

Every model must either import and verify, or be refused with one clean
error for a feature outside the supported scope (control flow subgraphs,
sequence/optional values). No model whose ops the onnx dialect supports may
fall back to the generic onnx.Node. Counts per operator are per ONNX node
type, read with the `onnx` package when it is importable (a Shape of a static
tensor folds to a constant), else per op of the imported IR.
"""

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys

try:
    import onnx
except ImportError:
    onnx = None

# Refusals that name a feature vram-opt does not model (see docs/import.md).
OUT_OF_SCOPE = [
    re.compile(r"control flow \(If, Loop, Scan\) is not supported"),
    re.compile(r"is not a tensor \(sequence, map and optional"),
    # ONNX shape inference on sequence/optional-typed values.
    re.compile(r"expected to have type but instead is null"),
    re.compile(r"Input type is null"),
    re.compile(r"Input Sequence and Tensor are expected"),
]

OP_PATTERN = re.compile(r"= onnx\.(\w+)[ (]")
GENERIC_PATTERN = re.compile(r'onnx\.Node "(\w+)"')


# Operators the importer expands into dedicated ops for the forms models
# use (lib/Dialect/ONNX/Expansion.cpp); the other forms (LSTM peepholes,
# sequence_lens, other activations) stay onnx.Node by design.
PARTLY_EXPANDED = {"LSTM", "GRU"}


def import_model(vram_opt, directory):
    model = os.path.join(directory, "model.onnx")
    result = subprocess.run([vram_opt, model], capture_output=True, text=True,
                            timeout=120)
    return os.path.basename(directory), result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vram-opt", required=True)
    parser.add_argument("--testdata", required=True)
    args = parser.parse_args()

    directories = sorted(
        os.path.join(args.testdata, d) for d in os.listdir(args.testdata)
        if os.path.isfile(os.path.join(args.testdata, d, "model.onnx")))
    dedicated = collections.Counter()
    generic = collections.Counter()
    out_of_scope = []
    unexpected = []
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for name, result in pool.map(lambda d: import_model(args.vram_opt, d),
                                     directories):
            if result.returncode == 0:
                generic_ops = set(GENERIC_PATTERN.findall(result.stdout))
                ops = set(OP_PATTERN.findall(result.stdout)) - {"Node", "NoValue"}
                if onnx is not None:
                    # Per ONNX node: a Shape of a static tensor folds to a
                    # constant and leaves no onnx.Shape behind.
                    model = os.path.join(args.testdata, name, "model.onnx")
                    graph = onnx.load(model, load_external_data=False).graph
                    ops = {n.op_type for n in graph.node} - generic_ops
                dedicated.update(ops)
                generic.update(generic_ops)
                continue
            errors = [l for l in result.stderr.splitlines() if "error:" in l]
            clean = result.returncode == 1 and len(errors) == 1
            if clean and any(p.search(errors[0]) for p in OUT_OF_SCOPE):
                out_of_scope.append(name)
            else:
                unexpected.append((name, result.returncode,
                                   result.stderr.strip()[:300]))

    fallbacks = sorted(set(dedicated) & set(generic) - PARTLY_EXPANDED)
    print(f"models: {len(directories)}")
    print(f"imported: {len(directories) - len(out_of_scope) - len(unexpected)}")
    print(f"refused, out of scope: {len(out_of_scope)}")
    print(f"unexpected failures: {len(unexpected)}")
    for name, code, message in unexpected:
        print(f"  UNEXPECTED {name} (exit {code}): {message}")
    print(f"supported ops falling back to onnx.Node: {len(fallbacks)}")
    for op in fallbacks:
        print(f"  FALLBACK {op}")
    print("models per supported op:")
    for op, count in sorted(dedicated.items()):
        print(f"  {op}: {count}")
    return 1 if unexpected or fallbacks else 0


if __name__ == "__main__":
    sys.exit(main())
