#!/usr/bin/env python3
"""Recompute-only plans for node-link graphs from a constraint solver
(OR-tools CP-SAT), as a reference for the fast planner where the Checkmate
MILP does not finish (beyond about 100 ops).

The model follows the retention-interval idea of Moccasin (Bartan et al.,
ICML 2023), written here from its description. Time is discrete: op t of
the schedule first runs at time t * S + S - 1, and the S - 1 times before
are free for reruns. Each tensor is resident over at most C intervals of
time (C = --intervals, S = --slots): the first starts at its op's first
run, each later one at a rerun of its op. A run at time x needs every input
resident over an interval that started before x and lasts until x, and the
bytes of the intervals covering each time must fit the budget (a cumulative
constraint). One run per time is then exactly the program's memory (two
runs at one time both count), so a solution is a valid plan: the script
runs it through the same rules as vram's insertFrees and simulate and stops
if its peak passes the budget. The objective is the reruns' compute time.
The solver's bound holds for plans of this shape only (at most C runs per
op), and it rarely moves from 0 on these graphs: the script gives plans,
not bounds.

With --hints it starts from the fast planner's plans (written by
`vram-planner-bench --runs-dir=DIR`), taking as many intervals and slots as
those need; without a start it finds no plan within minutes at 70-80% of
the peak on 250 ops.

Needs OR-tools (`pip install ortools`); not part of the test suite.

  bench/planner/cpsat_reference.py GRAPH.json [--fractions 0.9 0.7]
      [--intervals 2] [--slots 4] [--seconds 120] [--workers 2] [--hints DIR]
"""
import argparse
import json
import sys

try:
    from ortools.sat.python import cp_model
except ImportError:
    sys.exit("cpsat_reference.py needs OR-tools: pip install ortools")


def read_graph(path):
    """Ops in schedule order: (name, cost, bytes, inputs as op indices,
    is_output). Same reading as vram's parseNodeLinkGraph: one output tensor
    per node, sinks are outputs (kept to the end); parameter bytes are
    persistent and returned apart."""
    g = json.load(open(path))
    nodes, links = g["nodes"], g["links"]
    checkmate = "cost_cpu" in nodes[0]
    key = "id" if checkmate else "name"
    keys = [n[key] for n in nodes]
    index = {k: i for i, k in enumerate(keys)}
    if checkmate:
        schedule = sorted(range(len(nodes)), key=lambda i: keys[i])
        src, dst = "source", "target"
    else:
        schedule = [index[k] for k in g["graph"]["order"]]
        src, dst = "0", "1"
    pos = {node: p for p, node in enumerate(schedule)}
    inputs = [set() for _ in nodes]
    has_consumer = [False] * len(nodes)
    for link in links:
        a, b = index[link[src]], index[link[dst]]
        inputs[pos[b]].add(pos[a])
        has_consumer[a] = True
    ops = []
    params = 0
    for p, node in enumerate(schedule):
        n = nodes[node]
        cost = n["cost_cpu"] if checkmate else n["duration"]
        size = n["cost_ram"] if checkmate else n["out_cost"]
        params += 0 if checkmate else n.get("param_cost", 0)
        ops.append((str(n.get("name", keys[node])), float(cost), int(size),
                    sorted(inputs[p]), not has_consumer[node]))
    return ops, params


def consumers_of(ops):
    readers = [[] for _ in ops]
    for op, (_, _, _, inputs, _) in enumerate(ops):
        for u in inputs:
            readers[u].append(op)
    return readers


def unplanned_peak(ops, params):
    readers = consumers_of(ops)
    n = len(ops)
    last = [n - 1 if ops[v][4] else (readers[v][-1] if readers[v] else v)
            for v in range(n)]
    peak = 0
    for t in range(n):
        live = sum(ops[v][2] for v in range(t + 1) if last[v] >= t)
        peak = max(peak, live)
    return params + peak


def simulate(ops, params, runs):
    """Peak bytes and rerun cost of a run sequence, every instance freed after
    its last read (outputs kept), as vram's insertFrees and simulate."""
    n = len(ops)
    last_read = {}
    made_at = [None] * n
    frees = [[] for _ in range(len(runs) + 1)]
    for r, op in enumerate(runs):
        for u in ops[op][3]:
            if made_at[u] is None:
                raise ValueError(f"run {r} of op {op} reads op {u} before any run")
            last_read[u] = r
        if made_at[op] is not None and not ops[op][4]:
            frees[last_read[op] + 1].append(op)
        made_at[op] = r
        last_read[op] = r
    for v in range(n):
        if made_at[v] is not None and not ops[v][4]:
            frees[last_read[v] + 1].append(v)
    live, peak, seen, extra = params, params, set(), 0.0
    for r, op in enumerate(runs):
        for v in frees[r]:
            live -= ops[v][2]
        live += ops[op][2]
        peak = max(peak, live)
        if op in seen:
            extra += ops[op][1]
        seen.add(op)
    return peak, extra


def instances_of(ops, runs, slots):
    """Per op, [time made, time last read] of each instance a run sequence
    makes, and per run and input the instance it reads. The first run of op
    t is at time t * slots + slots - 1, the reruns before it in the slots
    just before."""
    n = len(ops)
    first, seen = set(), set()
    for r, op in enumerate(runs):
        if op not in seen:
            first.add(r)
            seen.add(op)
    time_of, pending = [0] * len(runs), []
    for r, op in enumerate(runs):
        if r not in first:
            pending.append(r)
            continue
        time_of[r] = op * slots + slots - 1
        for k, p in enumerate(reversed(pending)):
            time_of[p] = time_of[r] - 1 - k
        pending = []
    made = [[] for _ in range(n)]
    read_from = []
    for r, op in enumerate(runs):
        read_from.append({u: len(made[u]) - 1 for u in ops[op][3]})
        for u in ops[op][3]:
            made[u][-1][1] = time_of[r]
        made[op].append([time_of[r], time_of[r]])
    for v in range(n):
        if ops[v][4]:
            made[v][-1][1] = n * slots - 1
    return made, read_from


def reruns_per_stage(ops, runs):
    seen, most, count = set(), 0, 0
    for op in runs:
        if op in seen:
            count += 1
        else:
            seen.add(op)
            most, count = max(most, count), 0
    return most


def solve(ops, params, budget, intervals, slots, seconds, workers, hint=None):
    """Times: op t first runs at t * slots + slots - 1, reruns take the other
    times, one run's memory per time (two runs at one time both count)."""
    n = len(ops)
    horizon = n * slots
    readers = consumers_of(ops)
    made, read_from = instances_of(ops, hint, slots) if hint else (None, None)
    total = sum(c for _, c, _, _, _ in ops)
    scale = 1e6 / total
    m = cp_model.CpModel()
    start, end, active, ivs = {}, {}, {}, []
    copies_of = [0] * n
    for v, (_, _, size, _, is_output) in enumerate(ops):
        # A tensor nobody reads is not worth a second interval.
        copies = 1 if is_output or not readers[v] else intervals
        if made:
            copies = max(copies, len(made[v]))
        copies_of[v] = copies
        first_time = v * slots + slots - 1
        for i in range(copies):
            lo = first_time if i == 0 else first_time + 1
            s = m.NewIntVar(lo, horizon - 1 if i else lo, f"s{v}_{i}")
            e = m.NewIntVar(lo, horizon - 1, f"e{v}_{i}")
            a = m.NewConstant(1) if i == 0 else m.NewBoolVar(f"a{v}_{i}")
            if is_output:
                m.Add(e == horizon - 1)
            m.Add(e >= s)
            end_excl = m.NewIntVar(lo + 1, horizon, f"x{v}_{i}")
            m.Add(end_excl == e + 1)
            length = m.NewIntVar(1, horizon, f"l{v}_{i}")
            iv = m.NewOptionalIntervalVar(s, length, end_excl, a, f"i{v}_{i}")
            if size:
                ivs.append((iv, size))
            if i:
                m.Add(s > end[v, i - 1]).OnlyEnforceIf(a)
                m.AddImplication(a, active[v, i - 1])
            start[v, i], end[v, i], active[v, i] = s, e, a
    hinted_reads = {}
    if made:
        for v in range(n):
            for i in range(copies_of[v]):
                if i < len(made[v]):
                    m.AddHint(start[v, i], made[v][i][0])
                    m.AddHint(end[v, i], made[v][i][1])
                if i:
                    m.AddHint(active[v, i], int(i < len(made[v])))
        instance = [0] * n
        for r, op in enumerate(hint):
            for u, j in read_from[r].items():
                hinted_reads[op, instance[op], u] = j
            instance[op] += 1
    # Every run reads each input from an instance made before it and kept
    # until then.
    for v, (_, _, _, inputs, _) in enumerate(ops):
        for i in range(copies_of[v]):
            for u in inputs:
                covers = []
                for j in range(copies_of[u]):
                    z = m.NewBoolVar(f"c{v}_{i}_{u}_{j}")
                    m.Add(start[u, j] < start[v, i]).OnlyEnforceIf(z)
                    m.Add(end[u, j] >= start[v, i]).OnlyEnforceIf(z)
                    if j:
                        m.AddImplication(z, active[u, j])
                    covers.append(z)
                    if made:
                        m.AddHint(z, int(j == hinted_reads.get((v, i, u))))
                m.AddBoolOr(covers).OnlyEnforceIf(active[v, i])
    m.AddCumulative([iv for iv, _ in ivs], [b for _, b in ivs], budget - params)
    m.Minimize(sum(round(ops[v][1] * scale) * active[v, i]
                   for (v, i) in active if i))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    status = solver.Solve(m)
    bound = solver.BestObjectiveBound() / 1e6
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.StatusName(status), None, bound
    timed = sorted((solver.Value(start[v, i]), v)
                   for (v, i), a in active.items() if solver.Value(a))
    return solver.StatusName(status), [v for _, v in timed], bound


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.9, 0.7])
    parser.add_argument("--intervals", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=4,
                        help="times per stage: a stage's reruns take its "
                        "first slots-1 (more when a hint needs them)")
    parser.add_argument("--hints", help="directory of the fast plans' op runs "
                        "(vram-planner-bench --runs-dir) to start from")
    args = parser.parse_args()
    ops, params = read_graph(args.graph)
    peak = unplanned_peak(ops, params)
    total = sum(c for _, c, _, _, _ in ops)
    print(f"{args.graph}: {len(ops)} ops, unplanned peak {peak:,} B; "
          f"CP-SAT, {args.intervals} intervals per tensor, {args.seconds:g} s")
    print("| budget | status | overhead | checked peak | model bound | reruns |")
    print("|---|---|---|---|---|---|")
    for fraction in args.fractions:
        budget = int(fraction * peak)
        hint = None
        if args.hints:
            stem = args.graph.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            hints = f"{args.hints}/{stem}-{fraction:.2f}.runs"
            try:
                with open(hints) as f:
                    hint = [int(x) for x in f.read().split()]
            except OSError as error:
                sys.exit(f"--hints: {error.strerror}: {hints} (written by "
                         "vram-planner-bench --runs-dir for this fraction)")
            hint_peak, extra = simulate(ops, params, hint)
            # Fraction 0: the smallest budget the fast planner met, its peak.
            budget = budget or hint_peak
            print(f"(start: the fast plan, {extra / total:.1%})")
        if not budget:
            sys.exit("a budget of 0 (the fast planner's smallest) needs --hints")
        slots = max(args.slots, 1 + reruns_per_stage(ops, hint) if hint else 0)
        status, runs, bound = solve(ops, params, budget, args.intervals, slots,
                                    args.seconds, args.workers, hint)
        label = f"{fraction:.0%}" if fraction else f"min {budget / peak:.1%}"
        if runs is None:
            print(f"| {label} | {status} | - | - | {bound:.1%} | - |")
            continue
        checked, extra = simulate(ops, params, runs)
        if checked > budget:
            sys.exit(f"the plan at {label} peaks at {checked} > {budget}")
        print(f"| {label} | {status} | {extra / total:.1%} | "
              f"{checked:,} B | {bound:.1%} | {len(runs) - len(ops)} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
