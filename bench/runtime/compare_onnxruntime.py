#!/usr/bin/env python3
"""Times `vram-run --time` (its JIT compile, and the mean of N calls after
one warm-up call) and onnxruntime (PyPI; the mean of N runs after one
warm-up, 2 threads), N the same for both: as many calls as onnxruntime
runs in about a second, 3 to 50 (one call of a small model is a few
milliseconds, and this machine's times move by 10-20% from call to call),
on the same kit models, weights and inputs, at batch 1
and 8 (a batch the export fixed to 1 is freed; the BERT-like export's 8
is kept), checks that vram-run's outputs match onnxruntime's (`vram-run
--expected`, rtol 1e-3, atol 1e-5 of the largest output magnitude: random
weights make logits of several hundred, where float32 rounding alone is
1e-4 and more) and prints one table. The kit's exports
carry no weights: both get the same random ones, written into a copy of
the model.

  bench/runtime/compare_onnxruntime.py [--build build] [--models a,b]
                                       [--batches 1,8]

Needs onnx, onnxruntime and numpy (the PyPI interpreter).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODELS = [
    "test/models/resnet18.onnx",
    "test/models/kit/resnet50_eval.ts20.onnx",
    "test/models/kit/vgg16_eval.ts20.onnx",
    "test/models/kit/mobilenet_v2_eval.ts20.onnx",
    "test/models/kit/efficientnet_b0_eval.ts20.onnx",
    "test/models/kit/densenet121_eval.ts20.onnx",
    "test/models/kit/bert_base.ts20.onnx",
]
TIMES = re.compile(r"compile ([\d.]+) s, run ([\d.]+) s")
MAX_REL = re.compile(r"max rel error ([^ ]+)")
# Calls timed per model and batch: about this many seconds of
# onnxruntime's, within these bounds.
SECONDS, MIN_CALLS, MAX_CALLS = 1.0, 3, 50
# vram-run --expected's tolerances against onnxruntime's outputs: relative,
# and absolute as a fraction of the largest magnitude among them.
RTOL, ATOL = 1e-3, 1e-5


def vram_run(build, model, inputs, outputs, calls):
    """vram-run's compile seconds and mean seconds over `calls` calls on
    `inputs` (name -> array), the data onnxruntime gets (written as
    input_N.pb, graph input order), and whether its results match `outputs`
    (onnxruntime's, in order)."""
    atol = ATOL * max(float(np.max(np.abs(o))) for o in outputs)
    with tempfile.TemporaryDirectory() as directory:
        for kind, arrays in (("input", inputs.values()), ("output", outputs)):
            for index, array in enumerate(arrays):
                with open(os.path.join(directory, f"{kind}_{index}.pb"),
                          "wb") as f:
                    f.write(numpy_helper.from_array(array).SerializeToString())
        batch = next(iter(inputs.values())).shape[0]
        proc = subprocess.run([os.path.join(build, "bin", "vram-run"), model,
                               f"--batch={batch}", "--time", "--warmup=1",
                               f"--steps={calls}", f"--inputs={directory}",
                               f"--expected={directory}", f"--rtol={RTOL}",
                               f"--atol={atol}"],
                              capture_output=True, text=True)
    match = TIMES.search(proc.stderr)
    if not match:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1])
    mismatch = proc.returncode != 0 and "does not match" in proc.stderr
    if proc.returncode != 0 and not mismatch:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1])
    worst = MAX_REL.search(proc.stderr) if mismatch else None
    return float(match.group(1)), float(match.group(2)) / calls, \
        "match" if not mismatch else \
        f"MISMATCH (max rel error {worst.group(1) if worst else '?'})"


def with_weights(path, directory):
    """A copy of the model in `directory` with random data in every
    initializer that has none."""
    model = onnx.load(path, load_external_data=False)
    random = np.random.default_rng(0)
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        shape = tuple(tensor.dims)
        if np.issubdtype(dtype, np.floating):
            data = random.standard_normal(shape).astype(dtype) * 0.05
        else:
            data = np.zeros(shape, dtype)
        model.graph.initializer[index].CopyFrom(
            numpy_helper.from_array(data, tensor.name))
    free_batch(model)
    copy = os.path.join(directory, os.path.basename(path))
    onnx.save(model, copy)
    return copy


def free_batch(model):
    """Makes a batch dimension the export fixed to 1 free again: the first
    dimension of the data inputs and outputs (the kit's CNN exports fix it,
    and their graphs flatten with Flatten, which any batch passes)."""
    weights = {tensor.name for tensor in model.graph.initializer}
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if value.name not in weights and dims and dims[0].dim_value == 1:
            dims[0].dim_param = "batch"
    del model.graph.value_info[:]


def feed(session, batch):
    """Inputs for `session`, with `batch` for every dimension left free."""
    random = np.random.default_rng(1)
    inputs = {}
    for value in session.get_inputs():
        shape = [batch if not isinstance(d, int) else d for d in value.shape]
        if "int64" in value.type:
            inputs[value.name] = np.zeros(shape, np.int64)
        else:
            inputs[value.name] = random.standard_normal(shape).astype(
                np.float32)
    return inputs


def onnxruntime_session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(model, options,
                                providers=["CPUExecutionProvider"])


def onnxruntime_seconds(session, inputs):
    """The mean time of a run, the number of runs it was taken over (the
    number of calls to time vram-run over too) and the outputs."""
    outputs = session.run(None, inputs)
    start = time.perf_counter()
    session.run(None, inputs)
    first = time.perf_counter() - start
    calls = max(MIN_CALLS, min(MAX_CALLS, round(SECONDS / max(first, 1e-6))))
    start = time.perf_counter()
    for _ in range(calls):
        session.run(None, inputs)
    return (time.perf_counter() - start) / calls, calls, outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", help="comma-separated paths")
    parser.add_argument("--batches", default="1,8",
                        help="comma-separated batch sizes")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else \
        [os.path.join(ROOT, m) for m in MODELS]
    print("| model | batch | vram-run compile s | vram-run run s "
          "| onnxruntime run s | calls | run ratio | outputs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    ratios = []
    for model in models:
        name = os.path.basename(model)
        with tempfile.TemporaryDirectory() as directory:
            try:
                weighted = with_weights(model, directory)
                session = onnxruntime_session(weighted)
            except Exception as error:  # a row per model, whatever fails
                print(f"| {name} | | error: {error} | | | | | |", flush=True)
                continue
            batches = []
            for batch in (int(b) for b in args.batches.split(",")):
                inputs = feed(session, batch)
                actual = next(iter(inputs.values())).shape[0]
                if actual not in batches:
                    batches.append(actual)
                    ratios += row(args.build, name, actual, weighted,
                                  session, inputs)
    if ratios:
        print(f"\ngeomean run ratio: {statistics.geometric_mean(ratios):.1f}x")
    return 0


def row(build, name, batch, model, session, inputs):
    """Prints one table row; the run ratio, if both ran."""
    try:
        reference, calls, outputs = onnxruntime_seconds(session, inputs)
        compile_s, run_s, compared = vram_run(build, model, inputs, outputs,
                                              calls)
    except Exception as error:  # a row per model, whatever fails
        print(f"| {name} | {batch} | error: {error} | | | | | |", flush=True)
        return []
    print(f"| {name} | {batch} | {compile_s:.2f} | {run_s:.4f} "
          f"| {reference:.4f} | {calls} | {run_s / reference:.1f}x "
          f"| {compared} |", flush=True)
    return [run_s / reference]


if __name__ == "__main__":
    sys.exit(main())
