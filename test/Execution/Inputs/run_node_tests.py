#!/usr/bin/env python3
"""Runs ONNX backend node tests on CPU with vram-run and counts passes.

A node test is run when it imports and every onnx op in it is on the
supported list (the ops vram-convert-onnx-to-linalg lowers). vram-run
executes test_data_set_0 and compares with its expected outputs at ONNX's
tolerances. Results are reported per op (a model counts for every operator
its ONNX nodes use, read with the `onnx` package when it is importable, else
for every op of the imported IR: shape computations such as Shape fold to
constants there). Exit status 1 when a run crashes (a signal or an unexpected
exit status) or a pass count falls below its minimum; `--minimums FILE`
reads lines `# MINIMUM: <op|total> <count>` from FILE.
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

SUPPORTED = {
    # Elementwise.
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Exp", "Log", "Relu",
    "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Gelu", "HardSigmoid", "HardSwish",
    "Clip", "Where", "Cast", "Greater", "Less", "Equal", "Cos", "Sin", "Abs",
    # Linear algebra.
    "MatMul", "Gemm",
    # Convolution and pooling.
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
    # Normalization.
    "BatchNormalization", "LayerNormalization", "Softmax", "LogSoftmax",
    "Dropout",
    # Reductions.
    "ReduceMean", "ReduceSum",
    # Data movement.
    "Constant", "Identity", "Reshape", "Flatten", "Transpose", "Concat",
    "Split", "Slice", "Gather", "Shape", "Unsqueeze", "Squeeze", "Expand",
    "Pad", "Resize", "Trilu",
}

OP_PATTERN = re.compile(r"= onnx\.(\w+)[ (]")
MINIMUM_PATTERN = re.compile(r"#\s*MINIMUM:\s*(\w+)\s+(\d+)")


def first_error(stderr):
    """The first error message, without the model path (the test name says
    which model); shared with run_node_tests_opsets.py."""
    for line in stderr.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()[:240]
    return stderr.strip().splitlines()[-1][:240] if stderr.strip() else ""


def classify(stderr, other="error"):
    """The kind of a failed vram-run: a mismatch, an op not lowered, or
    `other`."""
    if "does not match" in stderr:
        return "wrong result"
    if "cannot lower" in stderr or "failed to legalize" in stderr:
        return "not lowered"
    return other


def run_test(tools, directory, timeout):
    name = os.path.basename(directory)
    model = os.path.join(directory, "model.onnx")
    data = os.path.join(directory, "test_data_set_0")
    # The data gives the values of inputs that decide shapes (Resize's
    # scales, a Reduce's axes), which the importer makes constants.
    imported = subprocess.run([tools.vram_opt, model, "--inputs=" + data],
                              capture_output=True, text=True, timeout=timeout)
    if imported.returncode != 0:
        return name, None, "import failed", ""
    ops = set(OP_PATTERN.findall(imported.stdout)) - {"NoValue"}
    if not ops or not ops <= SUPPORTED:
        return name, None, "unsupported ops", ""
    if onnx is not None:
        graph = onnx.load(model, load_external_data=False).graph
        ops = {node.op_type for node in graph.node}
    try:
        run = subprocess.run([tools.vram_run, model, "--inputs=" + data,
                              "--expected=" + data],
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return name, ops, "timeout", f"no result after {timeout} s"
    if run.returncode == 0:
        return name, ops, "pass", ""
    if run.returncode != 1:
        return name, ops, "crash", f"exit {run.returncode}: {first_error(run.stderr)}"
    return name, ops, classify(run.stderr), first_error(run.stderr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vram-opt", dest="vram_opt", required=True)
    parser.add_argument("--vram-run", dest="vram_run", required=True)
    parser.add_argument("--testdata", required=True)
    parser.add_argument("--minimums")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    directories = sorted(
        os.path.join(args.testdata, d) for d in os.listdir(args.testdata)
        if os.path.isfile(os.path.join(args.testdata, d, "model.onnx"))
        and os.path.isdir(os.path.join(args.testdata, d, "test_data_set_0")))
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(
            lambda d: run_test(args, d, args.timeout), directories))

    runs = [r for r in results if r[1] is not None]
    outcomes = collections.Counter(outcome for _, _, outcome, _ in runs)
    per_op_total = collections.Counter()
    per_op_pass = collections.Counter()
    for _, ops, outcome, _ in runs:
        per_op_total.update(ops)
        if outcome == "pass":
            per_op_pass.update(ops)

    print(f"node tests: {len(directories)}")
    print(f"run (supported ops only): {len(runs)}")
    print(f"passed: {outcomes['pass']}")
    for outcome in ("wrong result", "not lowered", "error", "timeout"):
        print(f"{outcome}: {outcomes[outcome]}")
    print(f"crashed: {outcomes['crash']}")
    print("passed per op:")
    for op in sorted(per_op_total):
        print(f"  {op}: {per_op_pass[op]}/{per_op_total[op]}")
    print("failures:")
    for name, _, outcome, message in sorted(runs):
        if outcome != "pass":
            print(f"  {name}: {outcome}: {message}")

    below = []
    if args.minimums:
        with open(args.minimums) as f:
            for op, count in MINIMUM_PATTERN.findall(f.read()):
                passed = outcomes["pass"] if op == "total" else per_op_pass[op]
                if passed < int(count):
                    below.append(f"{op}: {passed} < {count}")
    print(f"below minimum: {len(below)}")
    for line in below:
        print(f"  BELOW {line}")
    return 1 if below or outcomes["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
