"""Writes a vram-run --inputs directory: DIR then one SHAPE per input, in
order (`2x64`: int64 ids below 100, from a fixed seed; `f2x1x64x64`:
float32 zeros; `u4x10`: float32 uniform in [-1, 1), from the same seed)."""
import os
import sys

import numpy as np
from onnx import numpy_helper

root = sys.argv[1]
os.makedirs(root, exist_ok=True)
rng = np.random.default_rng(0)
for i, spec in enumerate(sys.argv[2:]):
    kind = spec[0] if spec[0] in "fu" else ""
    shape = tuple(int(d) for d in spec[len(kind):].split("x"))
    if kind == "f":
        tensor = np.zeros(shape, np.float32)
    elif kind == "u":
        tensor = rng.uniform(-1, 1, size=shape).astype(np.float32)
    else:
        tensor = rng.integers(0, 100, size=shape).astype(np.int64)
    with open(os.path.join(root, f"input_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(tensor).SerializeToString())
