"""Checks that the ranks of a data-parallel step computed what one process
computes for their combined batch: every output of SINGLE (vram-run --print
of the step) against the ranks' outputs (RANK0, RANK1, ...), by name. A
rank's output is either the whole tensor, the tensor flattened and padded
to a multiple of the ranks (its first elements count), or the rank's slice
of that (the ranks' slices, in rank order, are the padded tensor).

usage: compare_ranks.py SINGLE RANK0 RANK1 ... [--rtol R] [--atol A]
Prints `N outputs match` or the first mismatch (and exits 1)."""
import argparse
import os
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("single")
    parser.add_argument("ranks", nargs="+")
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-7)
    args = parser.parse_args()
    single = read_outputs(args.single)
    ranks = [read_outputs(path) for path in args.ranks]
    for name, expected in single.items():
        if any(name not in rank for rank in ranks):
            sys.exit(f"'{name}' is missing from a rank's outputs")
        actual = whole(name, expected, [rank[name] for rank in ranks])
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
