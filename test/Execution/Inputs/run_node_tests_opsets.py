#!/usr/bin/env python3
"""Imports and runs ONNX node tests re-targeted to every opset, per op and opset.

The fixtures come from scripts/make_node_tests.py (PyPI onnx's node tests of
the supported ops, each at every opset from 7 where it is a valid test with
the same expected outputs): a directory, or the committed .tar.xz, which is
unpacked under --workdir one test at a time, each deleted once run (--keep
keeps them; the whole tree is ~35k files). Layout as ONNX's backend test
data (<test>/model.onnx, test_data_set_0/{input,output}_N.pb) plus
manifest.json, which says each test's op, opset and provenance.

Every test is imported with vram-opt and, when that works, run on CPU with
vram-run against its expected outputs (ONNX's tolerances, rtol 1e-3, atol
1e-7). Tests whose imported program (modulo the module's opset and IR
version attributes) and data are the same as an already run one reuse that
result (--no-dedup runs every one): the same node at two opsets of one
schema imports identically, since the importer maps every version of an
operator onto the dialect's one form.

Counts are per (op, opset): generated, imported, passed. With `--expected
FILE` (lines `<op> <opset> <generated> <imported> <passed>`; `#` comments)
the exit status is 1 when any count falls below its line, or when a tool
crashes (a signal or an exit status other than 0 and 1). `--write-expected
FILE` writes the current counts in that format. Standard library only.
"""

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading

from run_node_tests import classify, first_error

OPSET_ATTRIBUTES = re.compile(r"onnx\.(?:ir_version|opset) = \d+ : i64")
GENERIC_OP = re.compile(r'onnx\.Node "(\w+)"')


def stream_tarball(tarball, workdir, wanted, submit, limit):
    """Unpacks the tarball one test at a time under workdir/fixtures and
    calls submit(entry, directory) as soon as a test's files are out; at
    most `limit` unpacked tests wait (the whole tree is ~35k files). Returns
    the manifest, which the generator stores first."""
    target = os.path.join(workdir, "fixtures")
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    manifest, entries, current, slots = None, {}, None, threading.Semaphore(limit)
    done = set()

    def flush():
        if current is not None and current in entries:
            slots.acquire()
            submit(entries[current], os.path.join(target, current), slots)
        done.add(current)

    with tarfile.open(tarball, "r|xz") as tar:
        for member in tar:
            parts = member.name.rstrip("/").split("/")
            if member.isdir():
                continue
            if not member.isfile() or member.name.startswith("/") or \
                    ".." in parts or len(parts) < 2:
                sys.exit(f"{tarball}: unexpected entry {member.name!r}")
            if parts[1:] == ["manifest.json"]:
                manifest = json.load(tar.extractfile(member))
                entries = {t["name"]: t for t in wanted(manifest)}
                continue
            if manifest is None:
                sys.exit(f"{tarball}: manifest.json is not the first file")
            test = parts[1]
            if test != current:
                flush()
                current = test
                if test in done:
                    sys.exit(f"{tarball}: {test}'s files are not together "
                             "(pack it with make_node_tests.py --tarball)")
            if test not in entries:
                continue
            path = os.path.join(target, *parts[1:])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                shutil.copyfileobj(tar.extractfile(member), f)
        flush()
    if manifest is None:
        sys.exit(f"{tarball}: no manifest.json")
    return manifest


def digest_files(directory):
    h = hashlib.sha256()
    for name in sorted(os.listdir(directory)):
        h.update(name.encode())
        with open(os.path.join(directory, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


class Runner:
    def __init__(self, args):
        self.args = args
        self.cache = {}
        self.lock = threading.Lock()
        self.runs = 0

    def tool(self, command):
        try:
            return subprocess.run(command, capture_output=True, text=True,
                                  errors="replace", timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            return None
        except OSError as e:  # e.g. the tool is missing or being relinked
            return subprocess.CompletedProcess(command, 1, "",
                                               f"error: {command[0]}: {e}")

    def execute(self, model, data):
        run = self.tool([self.args.vram_run, model, "--inputs=" + data,
                         "--expected=" + data])
        with self.lock:
            self.runs += 1
        if run is None:
            return "timeout", f"no result after {self.args.timeout} s"
        if run.returncode == 0:
            return "pass", ""
        if run.returncode != 1:
            return "crash", f"vram-run exit {run.returncode}: {first_error(run.stderr)}"
        return classify(run.stderr, "run error"), first_error(run.stderr)

    def test(self, entry, directory):
        """(imported, outcome, message, reused)."""
        model = os.path.join(directory, "model.onnx")
        data = os.path.join(directory, "test_data_set_0")
        # The data gives the values of inputs that decide shapes (Resize's
        # scales, a Reduce's axes), which the importer makes constants.
        imported = self.tool([self.args.vram_opt, model, "--inputs=" + data])
        if imported is None:
            return False, "import timeout", f"no result after {self.args.timeout} s", False
        if imported.returncode not in (0, 1):
            return False, "crash", (f"vram-opt exit {imported.returncode}: "
                                    f"{first_error(imported.stderr)}"), False
        if imported.returncode != 0:
            message = first_error(imported.stderr)
            kind = ("import refused (opset)" if "uses opset" in message
                    else "import failed")
            return False, kind, message, False
        generic = sorted(set(GENERIC_OP.findall(imported.stdout)))
        if generic:
            return True, "not lowered", "imports as onnx.Node: " + ", ".join(generic), False
        if self.args.no_dedup:
            return (True,) + self.execute(model, data) + (False,)
        key = hashlib.sha256(
            OPSET_ATTRIBUTES.sub("", imported.stdout).encode()).hexdigest()
        key += digest_files(data) + entry.get("initializers_sha256", entry["name"])
        with self.lock:
            event = self.cache.get(key)
            owner = event is None
            if owner:
                event = self.cache[key] = [threading.Event(), None]
        if owner:
            event[1] = self.execute(model, data)
            event[0].set()
            return (True,) + event[1] + (False,)
        event[0].wait()
        return (True,) + event[1] + (True,)


def read_expected(path):
    expected = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 5:
                sys.exit(f"{path}:{number}: expected '<op> <opset> <generated> "
                         f"<imported> <passed>', got {line!r}")
            expected[(fields[0], fields[1])] = tuple(int(x) for x in fields[2:])
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vram-opt", dest="vram_opt", required=True)
    parser.add_argument("--vram-run", dest="vram_run", required=True)
    parser.add_argument("--fixtures", required=True,
                        help="fixture directory, or a .tar.xz of one")
    parser.add_argument("--workdir", help="where a .tar.xz is unpacked")
    parser.add_argument("--expected", help="minimum counts to hold")
    parser.add_argument("--write-expected", help="write the counts here")
    parser.add_argument("--ops", help="comma-separated ops to run (default all)")
    parser.add_argument("--opsets", help="comma-separated opsets to run")
    parser.add_argument("--kinds", default="node,expanded",
                        help="node (single-node tests), expanded, or both")
    parser.add_argument("--no-dedup", action="store_true")
    parser.add_argument("--keep", action="store_true",
                        help="keep the unpacked tests (default: each is "
                             "deleted once run)")
    parser.add_argument("--list-failures", action="store_true",
                        help="print every failing test, not a summary")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    ops = set(args.ops.split(",")) if args.ops else None
    opsets = {int(o) for o in args.opsets.split(",")} if args.opsets else None
    kinds = set(args.kinds.split(","))

    def wanted(manifest):
        return [t for t in manifest["tests"]
                if (ops is None or t["op"] in ops)
                and (opsets is None or t["opset"] in opsets)
                and t["kind"] in kinds]

    runner = Runner(args)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = []
        if os.path.isdir(args.fixtures):
            with open(os.path.join(args.fixtures, "manifest.json")) as f:
                manifest = json.load(f)
            for t in wanted(manifest):
                futures.append((t, pool.submit(
                    runner.test, t, os.path.join(args.fixtures, t["name"]))))
        else:
            if not args.workdir:
                sys.exit("--workdir is needed to unpack " + args.fixtures)

            def submit(entry, directory, slots):
                def job():
                    try:
                        return runner.test(entry, directory)
                    finally:
                        if not args.keep:
                            shutil.rmtree(directory, ignore_errors=True)
                        slots.release()
                futures.append((entry, pool.submit(job)))

            manifest = stream_tarball(args.fixtures, args.workdir, wanted,
                                      submit, 4 * args.jobs)
        tests = [t for t, _ in futures]
        results = [f.result() for _, f in futures]

    def label(t):
        return t["op"] if t["kind"] == "node" else t["op"] + "(expanded)"

    generated = collections.Counter()
    imported = collections.Counter()
    passed = collections.Counter()
    outcomes = collections.Counter()
    failures = collections.defaultdict(list)
    summary = collections.defaultdict(list)
    reused = 0
    for t, (ok, outcome, message, was_reused) in zip(tests, results):
        key = (label(t), str(t["opset"]))
        generated[key] += 1
        imported[key] += ok
        passed[key] += outcome == "pass"
        outcomes[outcome] += 1
        reused += was_reused
        if outcome != "pass":
            failures[(outcome, message)].append(t["name"])
            summary[(outcome, re.sub(r"\d+", "N", message))].append(t["name"])

    keys = sorted(generated, key=lambda k: (k[0], int(k[1])))
    print(f"fixtures: onnx {manifest['onnx_version']}, opsets "
          f"{manifest['min_opset']}..{manifest['max_opset']}")
    print(f"node tests: {len(tests)}")
    print(f"imported: {sum(imported.values())}")
    print(f"passed: {outcomes['pass']}")
    print(f"vram-run runs: {runner.runs} (results reused for {reused} tests "
          "with the same imported program and data)")
    for outcome in ("import refused (opset)", "import failed", "import timeout",
                    "not lowered", "wrong result", "run error", "timeout"):
        print(f"{outcome}: {outcomes[outcome]}")
    print(f"crashed: {outcomes['crash']}")

    print("per op and opset (passed/imported/generated):")
    by_op = collections.defaultdict(list)
    for op, opset in keys:
        k = (op, opset)
        by_op[op].append(f"{opset}:{passed[k]}/{imported[k]}/{generated[k]}")
    for op in sorted(by_op):
        print(f"  {op}: " + " ".join(by_op[op]))
    print("per opset (passed/imported/generated):")
    for opset in sorted({int(k[1]) for k in keys}):
        ks = [k for k in keys if k[1] == str(opset)]
        print(f"  {opset}: {sum(passed[k] for k in ks)}/"
              f"{sum(imported[k] for k in ks)}/{sum(generated[k] for k in ks)}")

    print("failures:")
    if args.list_failures:
        for (outcome, message), names in sorted(failures.items()):
            for name in names:
                print(f"  {name}: {outcome}: {message}")
    else:
        for (outcome, message), names in sorted(
                summary.items(), key=lambda x: (x[0][0], -len(x[1]))):
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            print(f"  {len(names)} x {outcome}: {message} [{shown}]")

    if args.write_expected:
        with open(args.write_expected, "w") as f:
            f.write("# Minimum counts of test/Execution/onnx-node-tests-opsets.test:\n"
                    "# <op> <opset> <generated> <imported> <passed>\n"
                    "# Written by run_node_tests_opsets.py --write-expected; "
                    "counts may only go up.\n")
            for k in keys:
                f.write(f"{k[0]} {k[1]} {generated[k]} {imported[k]} {passed[k]}\n")

    below = []
    if args.expected:
        for (op, opset), minimum in sorted(read_expected(args.expected).items()):
            if ops is not None and op.split("(")[0] not in ops:
                continue
            if opsets is not None and int(opset) not in opsets:
                continue
            if op.endswith("(expanded)") and "expanded" not in kinds or \
                    not op.endswith("(expanded)") and "node" not in kinds:
                continue
            k = (op, opset)
            actual = (generated[k], imported[k], passed[k])
            for what, have, need in zip(("generated", "imported", "passed"),
                                        actual, minimum):
                if have < need:
                    below.append(f"{op} opset {opset} {what}: {have} < {need}")
    print(f"below expectation: {len(below)}")
    for line in below:
        print(f"  BELOW {line}")
    return 1 if below or outcomes["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
