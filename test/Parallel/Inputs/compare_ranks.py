"""Checks that the ranks of a data-parallel step computed what one process
computes for their combined batch: every output of SINGLE (vram-run --print
of the step) against the ranks' outputs (RANK0, RANK1, ...), by name. A
rank's output is either the whole tensor, the tensor flattened and padded
to a multiple of the ranks (its first elements count), or the rank's slice
of that (the ranks' slices, in rank order, are the padded tensor).

With --tensor-slices STEP (the per-rank step's MLIR, vram-opt --parallel
with tp=T), a parameter split among the T tensor-parallel ranks (an argument
with `vram.tensor_slice_of`), and its optimizer state (outputs named
`<parameter>.<state>`), is each rank's chunk of every part along the split
axis: the ranks' chunks are joined back into the whole tensor.

With --stages, the ranks are the stages of a pipeline: each output is on
the ranks whose stage holds it (the loss on the last, a parameter where its
layer runs), the same on each of them.

usage: compare_ranks.py SINGLE RANK0 RANK1 ... [--tensor-slices STEP]
                        [--stages] [--rtol R] [--atol A]
Prints `N outputs match` or the first mismatch (and exits 1)."""
import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Training", "Inputs"))
from check_update import read_outputs  # noqa: E402


def whole(name, single, parts):
    """The ranks' values of output `name` as the single process's tensor."""
    size = single.size
    if all(part.size == size for part in parts):
        for rank, part in enumerate(parts[1:], 1):
            if not np.array_equal(part, parts[0]):
                sys.exit(f"'{name}': rank {rank} differs from rank 0")
        return parts[0]
    if parts[0].size >= size:
        return parts[0][:size]
    return np.concatenate(parts)[:size]


SLICE = re.compile(
    r'onnx.name = "([^"]+)"[^{}]*vram.tensor_slice_of = \{axis = (\d+) : i64, '
    r'parts = array<i64: ([\d, ]+)>, type = tensor<([\dx]+)x[a-z]+\d*>\}')


def read_slices(path):
    """{parameter name: (axis, parts, whole shape)} of the step's arguments."""
    with open(path) as f:
        text = f.read()
    return {name: (int(axis), [int(p) for p in parts.split(",")],
                   [int(d) for d in dims.split("x")])
            for name, axis, parts, dims in SLICE.findall(text)}


def join_tensor_slices(parts, layout):
    """The whole tensor from the ranks' chunks (flattened) of `layout`."""
    axis, sizes, shape = layout
    ranks = len(parts)
    local = list(shape)
    local[axis] //= ranks
    chunks = [part.reshape(local) for part in parts]
    pieces, offset = [], 0
    for size in sizes:
        chunk = size // ranks
        for c in chunks:
            pieces.append(np.take(c, range(offset, offset + chunk), axis=axis))
        offset += chunk
    return np.concatenate(pieces, axis=axis).reshape(-1)


def layout_of(name, slices):
    """The split of output `name`: its parameter's, or that of the parameter
    it is the optimizer state of."""
    for param, layout in slices.items():
        if name == param or name.startswith(param + "."):
            return layout
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("single")
    parser.add_argument("ranks", nargs="+")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument("--tensor-slices")
    parser.add_argument("--stages", action="store_true")
    args = parser.parse_args()
    single = read_outputs(args.single)
    ranks = [read_outputs(path) for path in args.ranks]
    slices = read_slices(args.tensor_slices) if args.tensor_slices else {}
    for name, expected in single.items():
        holders = [rank for rank in ranks if name in rank]
        if not holders or (len(holders) < len(ranks) and not args.stages):
            sys.exit(f"'{name}' is missing from a rank's outputs")
        parts = [rank[name] for rank in holders]
        layout = layout_of(name, slices)
        actual = (join_tensor_slices(parts, layout) if layout
                  else whole(name, expected, parts))
        if actual.size != expected.size:
            sys.exit(f"'{name}': {actual.size} elements, expected "
                     f"{expected.size}")
        if not np.allclose(actual, expected, rtol=args.rtol, atol=args.atol):
            worst = int(np.argmax(np.abs(actual - expected)))
            sys.exit(f"'{name}' differs: element {worst} is {actual[worst]}, "
                     f"expected {expected[worst]}")
    print(f"{len(single)} outputs match")


if __name__ == "__main__":
    main()
