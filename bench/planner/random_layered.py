#!/usr/bin/env python3
"""Random layered DAGs in the node-link JSON of the published random layered
graphs (../shared/bench/checkmate-graphs/README.md), for planner benchmarks
at sizes beyond the two published ones.

The generator is ours, after the description of the family in "Neural
Topological Ordering for Computation Graphs" (Gagrani et al. 2022, App. A);
its parameters carry the names of the published files:
  n    nodes, including a source (node 0) and a sink (node 1)
  w    width: levels hold 2 * w * sqrt(n) inner nodes on average
  nlv  level-size variation: sizes drawn uniformly within +-nlv of the mean,
       then scaled to n - 2 nodes in all
  ed   edge density: a node reads each node of the level above with
       probability ed (at least one)
  scd  skip-connection density: the fraction of all edges that skip levels
       (from a random node two or more levels up)
Output bytes are 10 * U{1..409} (mean about 2 kB), compute times U{1..1000},
as in the published files; the schedule (graph.order) is a uniformly random
topological order (Kahn's algorithm, a random ready node each step), which
is what gives reordering room to lower the peak.

  bench/planner/random_layered.py OUT_DIR [--sizes 100 250 500 1000] [--seed 1]
"""
import argparse
import json
import math
import os
import random


def generate(n, w, nlv, ed, scd, rng):
    inner = n - 2
    mean_width = max(1.0, 2 * w * math.sqrt(n))
    num_levels = max(1, round(inner / mean_width))
    raw = [rng.uniform(1 - nlv, 1 + nlv) for _ in range(num_levels)]
    sizes = [max(1, round(r * inner / sum(raw))) for r in raw]
    while sum(sizes) > inner:
        sizes[sizes.index(max(sizes))] -= 1
    while sum(sizes) < inner:
        sizes[rng.randrange(num_levels)] += 1
    levels, next_id = [], 2
    for size in sizes:
        levels.append(list(range(next_id, next_id + size)))
        next_id += size

    edges = set()
    for node in levels[0]:
        edges.add((0, node))
    for k in range(1, num_levels):
        for node in levels[k]:
            inputs = [u for u in levels[k - 1] if rng.random() < ed]
            if not inputs:
                inputs = [rng.choice(levels[k - 1])]
            edges.update((u, node) for u in inputs)
    skips = round(len(edges) * scd / (1 - scd)) if num_levels > 2 else 0
    while skips > 0:
        k = rng.randrange(2, num_levels)
        edge = (rng.choice(levels[rng.randrange(k - 1)]), rng.choice(levels[k]))
        if edge not in edges:
            edges.add(edge)
            skips -= 1
    readers = {u for u, _ in edges}
    for node in range(2, n):
        if node not in readers:
            edges.add((node, 1))

    successors = {node: [] for node in range(n)}
    waiting = {node: 0 for node in range(n)}
    for u, v in edges:
        successors[u].append(v)
        waiting[v] += 1
    ready, order = [0], []
    while ready:
        node = ready.pop(rng.randrange(len(ready)))
        order.append(node)
        for v in successors[node]:
            waiting[v] -= 1
            if waiting[v] == 0:
                ready.append(v)
    assert len(order) == n

    nodes = [{"out_cost": 10 * rng.randint(1, 409), "param_cost": 0,
              "duration": 0 if node == 0 else rng.randint(1, 1000),
              "name": node} for node in range(n)]
    name = f"random_layered_n{n}_w{w}_nlv{nlv}_ed{ed}_scd{scd}"
    return name, {
        "directed": True, "multigraph": False,
        "graph": {"name": name, "source_node": 0, "target_node": 1,
                  "order": order},
        "nodes": nodes,
        "links": [{"0": u, "1": v} for u, v in sorted(edges)],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[100, 250, 500, 1000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    # Width grows with n as in the published pair (0.27 at 100, 0.43 at 250).
    for n in args.sizes:
        w = round(0.27 + (0.43 - 0.27) * math.log(n / 100) / math.log(2.5), 2)
        rng = random.Random(args.seed * 100003 + n)
        name, graph = generate(n, w, 0.75, 0.2, 0.14, rng)
        with open(os.path.join(args.out_dir, f"gen_{name}.json"), "w") as f:
            json.dump(graph, f, separators=(",", ":"))
        print(f"{name}: {n} nodes, {len(graph['links'])} edges")


if __name__ == "__main__":
    main()
