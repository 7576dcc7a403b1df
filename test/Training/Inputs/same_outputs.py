"""Checks that two `vram-run --print` outputs hold the same values, bit for
bit (9 significant digits print an f32 exactly), tensor by tensor by name.

usage: same_outputs.py A B [--skip=REGEX]   (names matching REGEX are left
       out of both; every other name must be in both)
"""
import argparse
import re
import sys

from check_update import read_outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--skip", default=None)
    args = parser.parse_args()
    skip = re.compile(args.skip) if args.skip else None
    a, b = read_outputs(args.a), read_outputs(args.b)
    kept = lambda outputs: {n for n in outputs if not (skip and skip.search(n))}
    if kept(a) != kept(b):
        print("different tensors:", sorted(kept(a) ^ kept(b)))
        return 1
    for name in sorted(kept(a)):
        if a[name].shape != b[name].shape or (a[name] != b[name]).any():
            print(f"'{name}' differs")
            return 1
    print(f"{len(kept(a))} tensors are the same")
    return 0


if __name__ == "__main__":
    sys.exit(main())
