"""Writes vram-run --inputs directories for the tiny GPT
(gpt_tiny_f32.onnx: 16 positions, 101 tokens): token ids and next-token
labels, for a global batch of 1 (DIR/batch1) and of 2 (DIR/batch2: two
data-parallel ranks' rows)."""
import os
import sys

import numpy as np
from onnx import numpy_helper

root = sys.argv[1]
rng = np.random.default_rng(0)
ids = rng.integers(0, 101, size=(2, 16)).astype(np.int64)
labels = np.roll(ids, -1, axis=1)
for batch in (1, 2):
    directory = os.path.join(root, f"batch{batch}")
    os.makedirs(directory, exist_ok=True)
    for i, tensor in enumerate([ids[:batch], labels[:batch]]):
        with open(os.path.join(directory, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(tensor).SerializeToString())
