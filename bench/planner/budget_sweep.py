#!/usr/bin/env python3
"""Plans the training step of every kit model under budgets from 95% down to
10% of its unplanned peak and prints one table row per (model, optimizer,
precision, budget): what the planner says the planned peak is, what the
memory analysis measures on the rewritten IR (the verified peak), whether
they agree, the device bytes of the program once lowered (which must fit the
budget), the overhead, and the smallest budget named when a budget is
refused. It also checks that the sweep is monotone (a met budget is never
below a refused one) and that every "smallest budget that can be met" is then
met.

  bench/planner/budget_sweep.py [--build build] [--models a,b] [--quick]

Standard library only; vram-opt does the work.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

KIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "test", "models", "kit")
# (file stem, batch): the training issue's kit.
MODELS = [
    ("resnet50_train.ts14", 8),
    ("mobilenet_v2_train.ts14", 8),
    ("efficientnet_b0_train.ts14", 8),
    ("vgg16_eval.ts14", 8),
    ("densenet121_eval.ts14", 8),
    ("gpt2_small.ts14", 1),
    ("bert_base.ts14", 8),
]
FRACTIONS = [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
PLAN_LINE = re.compile(r"planned peak ([\d,]+) B.*overhead ([\d.]+)%")
SMALLEST = re.compile(r"smallest budget that can be met is ([\d,]+) bytes")
FLOOR = re.compile(r"no plan can go below ([\d,]+) bytes")
LOWERED = re.compile(r"vram.lowered_peak = (\d+)")


def number(text):
    return int(text.replace(",", ""))


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


class Config:
    def __init__(self, args, stem, batch, optimizer, precision):
        self.vram_opt = os.path.join(args.build, "bin", "vram-opt")
        self.model = os.path.join(KIT, stem + ".onnx")
        self.name = stem
        self.batch = batch
        self.optimizer = optimizer
        self.precision = precision

    def command(self, *extra):
        return [self.vram_opt, self.model, f"--batch={self.batch}",
                f"--train=optimizer={self.optimizer} "
                f"precision={self.precision}", *extra]

    def unplanned_peak(self):
        status, out, err = run(self.command("--report=json"))
        if status != 0:
            raise RuntimeError(err.strip().splitlines()[0])
        return json.loads(out)["peak"]["bytes"]

    def plan(self, budget):
        """(planner's peak, verified peak, lowered peak, overhead %, seconds)
        or the refusal (None, smallest budget, floor, message, None)."""
        with tempfile.TemporaryDirectory() as directory:
            planned = os.path.join(directory, "planned.mlir")
            start = time.time()
            status, out, err = run(self.command(f"--budget={budget}",
                                                "-o", planned))
            seconds = time.time() - start
            if status != 0:
                smallest, floor = SMALLEST.search(err), FLOOR.search(err)
                if smallest:
                    return None, number(smallest.group(1)), \
                        number(floor.group(1)) if floor else None, None, None
                return None, None, None, err.strip().splitlines()[-1], None
            match = PLAN_LINE.search(out + err)
            with open(planned) as text:
                lowered = LOWERED.search(text.read())
            # The memory analysis of the planned IR as written.
            status, report, err = run([self.vram_opt, planned,
                                       "--report=json"])
        verified = json.loads(report)["peak"]["bytes"] if status == 0 else None
        return number(match.group(1)), verified, \
            int(lowered.group(1)) if lowered else None, \
            float(match.group(2)), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--models", help="comma-separated file stems")
    parser.add_argument("--optimizers", default="momentum,adam")
    parser.add_argument("--precisions", default="fp32,amp-bf16")
    parser.add_argument("--fractions",
                        help="comma-separated fractions of the peak")
    args = parser.parse_args()
    models = MODELS
    if args.models:
        wanted = args.models.split(",")
        models = [m for m in MODELS if m[0] in wanted] + \
            [(w, 8) for w in wanted if w not in {m[0] for m in MODELS}]
    fractions = [float(f) for f in args.fractions.split(",")] \
        if args.fractions else FRACTIONS

    print("| model | optimizer | precision | budget % | budget | planner peak "
          "| verified peak | equal | lowered peak | overhead % | plan s "
          "| result |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- |")
    problems = []
    for stem, batch in models:
        for optimizer in args.optimizers.split(","):
            for precision in args.precisions.split(","):
                config = Config(args, stem, batch, optimizer, precision)
                label = f"{stem} {optimizer} {precision}"
                try:
                    peak = config.unplanned_peak()
                except RuntimeError as error:
                    problems.append(f"{label}: {error}")
                    continue
                met, refused = [], []
                for fraction in fractions:
                    budget = int(peak * fraction)
                    planned, verified, lowered, overhead, seconds = \
                        config.plan(budget)
                    row = f"| {stem} | {optimizer} | {precision} | " \
                          f"{fraction * 100:.0f} | {budget:,} | "
                    if planned is None and verified is not None:
                        refused.append(budget)
                        row += f" | | | | | | cannot: smallest " \
                               f"{verified:,}" + \
                               (f", floor {lowered:,}" if lowered else "")
                        smallest = verified
                        if smallest < peak:
                            check = config.plan(smallest)
                            if check[0] is None:
                                problems.append(f"{label}: named smallest "
                                                f"{smallest:,} is not met")
                        row += " |"
                    elif planned is None:
                        problems.append(f"{label} at {budget:,}: {overhead}")
                        row += f" | | | | | | error: {overhead} |"
                    else:
                        met.append(budget)
                        equal = planned == verified
                        if not equal:
                            problems.append(
                                f"{label} at {budget:,}: planner {planned:,}, "
                                f"verified {verified}")
                        if lowered is None or lowered > budget:
                            problems.append(
                                f"{label} at {budget:,}: lowered program "
                                f"needs {lowered}")
                        row += f"{planned:,} | {verified:,} | " \
                               f"{'yes' if equal else 'NO'} | " \
                               f"{lowered if lowered is None else f'{lowered:,}'} " \
                               f"| {overhead:.1f} | {seconds:.2f} | planned |"
                    print(row, flush=True)
                if met and refused and min(met) < max(refused):
                    problems.append(f"{label}: not monotone (met "
                                    f"{min(met):,}, refused {max(refused):,})")
    print()
    print(f"{len(problems)} problems")
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
