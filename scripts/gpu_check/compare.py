#!/usr/bin/env python3
"""Compares the GPU outputs of scripts/gpu_check.sh with the CPU's and prints
one table row per check: results, step time, device memory, plan.

Usage: compare.py DIR   (DIR as scripts/gpu_check.sh prepare wrote it)
Exit status 1 if a check has no GPU output or its results differ by more
than TOLERANCE (relative, against max(1, |CPU value|); a NaN on both sides
agrees, a NaN on one side does not).
"""
import json
import math
import os
import sys

TOLERANCE = 1e-3


def parse(path):
    """Results (lists of values, or ("checksum", sum, sumsq)) and stats."""
    results, stats = [], {}
    with open(path) as stream:
        lines = iter(stream.read().split("\n"))
    for line in lines:
        words = line.split()
        if not words:
            continue
        if words[0] == "result":
            results.append(None)
        elif words[0] == "values":
            results[-1] = [float(next(lines)) for _ in range(int(words[1]))]
        elif words[0] == "checksum":
            results[-1] = ("checksum", float(words[1]), float(words[2]))
        elif len(words) == 2:
            stats[words[0]] = float(words[1])
    return results, stats


def relative(c, g, scale):
    """|c - g| / max(1, |scale|); NaN on both sides counts as agreement."""
    if math.isnan(c) or math.isnan(g):
        return 0.0 if math.isnan(c) and math.isnan(g) else math.inf
    return abs(c - g) / max(1.0, abs(scale))


def difference(cpu, gpu):
    """The largest relative difference between two parsed results."""
    if isinstance(cpu, tuple) != isinstance(gpu, tuple):
        return math.inf
    if isinstance(cpu, tuple):
        return max(relative(cpu[1], gpu[1], math.sqrt(abs(cpu[2]))),
                   relative(cpu[2], gpu[2], cpu[2]))
    if len(cpu) != len(gpu):
        return math.inf
    return max((relative(c, g, c) for c, g in zip(cpu, gpu)), default=0.0)


def byte_count(value):
    return f"{int(value):,}" if value is not None else "-"


def main():
    root = sys.argv[1]
    failed = False
    header = ("check", "values", "max rel diff", "GPU s/step", "device bytes in step",
              "step arena", "analysed peak", "budget", "planned peak",
              "predicted overhead")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in sorted(os.listdir(root)):
        work = os.path.join(root, name)
        if not os.path.isfile(os.path.join(work, "cpu.out")):
            continue
        report = json.load(open(os.path.join(work, "report.json")))
        plan = report.get("plan", {})
        # "function bytes" lines: the step's arena and the harness's own.
        arenas = dict(line.split() for line in open(os.path.join(work, "arenas")) if line.strip())
        cpu, _ = parse(os.path.join(work, "cpu.out"))
        gpu_out = os.path.join(work, "gpu.out")
        gpu, stats = parse(gpu_out) if os.path.isfile(gpu_out) else ([], {})
        if len(gpu) != len(cpu) or None in gpu:
            worst = math.inf
        else:
            worst = max((difference(c, g) for c, g in zip(cpu, gpu)), default=0.0)
        failed |= not worst <= TOLERANCE
        count = sum(len(c) if isinstance(c, list) else 1 for c in cpu if c)
        step = None
        if "device-bytes-peak" in stats:
            step = stats["device-bytes-peak"] - stats["device-bytes-before"]
        overhead = plan.get("overhead")
        print("| " + " | ".join([
            name, str(count), f"{worst:.2e}" + ("" if worst <= TOLERANCE else " FAIL"),
            f"{stats['seconds-per-call']:.4f}" if "seconds-per-call" in stats else "-",
            byte_count(step), byte_count(int(arenas["model"])) if "model" in arenas else "-",
            byte_count(report["peak"]["bytes"]), byte_count(plan.get("budget")),
            byte_count(plan.get("planned_peak")),
            f"{100 * overhead:.1f}%" if overhead is not None else "-"]) + " |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
