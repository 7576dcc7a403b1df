#!/usr/bin/env python3
"""Times `vram-run --time` (its JIT compile, and the mean of 3 calls, the
first one cold) and onnxruntime (PyPI; the median of 5 runs after one
warm-up, 2 threads) on the same kit
models and inputs, at batch 1 where the export leaves the batch free (the
BERT-like export fixes 8), and prints one table. The kit's exports carry no weights:
onnxruntime gets random ones of the right shapes, vram-run generates its own
(values do not change the time of dense kernels).

  bench/runtime/compare_onnxruntime.py [--build build] [--models a,b]

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
# vram-run calls @main this many times on the same data (--steps).
CALLS = 3


def vram_run(build, model, inputs):
    """vram-run's compile and run seconds on `inputs` (name -> array), the
    same data onnxruntime gets (written as input_N.pb, graph input order)."""
    with tempfile.TemporaryDirectory() as directory:
        for index, array in enumerate(inputs.values()):
            with open(os.path.join(directory, f"input_{index}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())
        batch = next(iter(inputs.values())).shape[0]
        proc = subprocess.run([os.path.join(build, "bin", "vram-run"), model,
                               f"--batch={batch}", "--time",
                               f"--steps={CALLS}", f"--inputs={directory}"],
                              capture_output=True, text=True)
    match = TIMES.search(proc.stderr)
    if proc.returncode != 0 or not match:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1])
    return float(match.group(1)), float(match.group(2)) / CALLS


def with_weights(path):
    """The model with random data in every initializer that has none."""
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
    return model.SerializeToString()


def feed(session):
    random = np.random.default_rng(1)
    inputs = {}
    for value in session.get_inputs():
        shape = [1 if not isinstance(d, int) else d for d in value.shape]
        if "int64" in value.type:
            inputs[value.name] = np.zeros(shape, np.int64)
        else:
            inputs[value.name] = random.standard_normal(shape).astype(
                np.float32)
    return inputs


def onnxruntime_session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(with_weights(model), options,
                                providers=["CPUExecutionProvider"])


def onnxruntime_seconds(session, inputs):
    session.run(None, inputs)
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        session.run(None, inputs)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", help="comma-separated paths")
    args = parser.parse_args()
    models = args.models.split(",") if args.models else \
        [os.path.join(ROOT, m) for m in MODELS]
    print("| model | vram-run compile s | vram-run run s (mean of 3) "
          "| onnxruntime run s | run ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ratios = []
    for model in models:
        name = os.path.basename(model)
        try:
            session = onnxruntime_session(model)
            inputs = feed(session)
            compile_s, run_s = vram_run(args.build, model, inputs)
            reference = onnxruntime_seconds(session, inputs)
        except Exception as error:  # a row per model, whatever fails
            print(f"| {name} | error: {error} | | | |", flush=True)
            continue
        ratios.append(run_s / reference)
        print(f"| {name} | {compile_s:.2f} | {run_s:.3f} | {reference:.4f} "
              f"| {run_s / reference:.1f}x |", flush=True)
    if ratios:
        print(f"\ngeomean run ratio: {statistics.geometric_mean(ratios):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
