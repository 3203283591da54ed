#!/usr/bin/env python3
"""Benchmark: `campaign split`'s makespan against the lower bound, beside round-robin and LPT.

Generated, seeded cell sets (costs as epochs, integers, or as seconds, floats):

- uniform:      N cells, integer costs uniform in 1..100;
- heavy-tailed: N cells, Pareto (alpha 1.5) seconds, 60 s scale: a few cells dwarf the rest;
- few-big:      K+1 big cells (80..120) among N small ones (1..10): LPT's weak case;
- equal:        N cells of cost 20 (N not always a multiple of K);
- graham:       LPT's textbook worst case, 2K+1 cells: 2K-1, 2K-1, 2K-2, 2K-2, ..., K+1, K+1, K, K, K.

for K = 2, 4, 8 and N = 20, 100, 500 (graham has its own N), several seeds each. For each set it
prints the mean and the worst makespan / bound of: round-robin (a split by count), plain LPT,
and ours (LPT and Karmarkar-Karp, each improved by the local search: splitting.split), with
bound = max(total/K, largest cell). Where a ratio above 1 is the cells' own (no split can do
better), the column `ours/pigeon` divides by the sharper pigeonhole bound instead. It also
prints the slowest split's time. Never fails on a figure: the target (1.02) is reported.

    python bench/split.py [--seeds N] [--sizes 20,100,500] [--ks 2,4,8]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from campaignops.model import splitting

TARGET = 1.02
Gen = Callable[[random.Random, int, int], list[float]]


def uniform(rng: random.Random, n: int, k: int) -> list[float]:
    return [float(rng.randint(1, 100)) for _ in range(n)]


def heavy_tailed(rng: random.Random, n: int, k: int) -> list[float]:
    return [round(60 * rng.paretovariate(1.5), 1) for _ in range(n)]


def few_big(rng: random.Random, n: int, k: int) -> list[float]:
    cells = [float(rng.randint(80, 120)) for _ in range(k + 1)]
    cells += [float(rng.randint(1, 10)) for _ in range(n)]
    rng.shuffle(cells)
    return cells


def equal(rng: random.Random, n: int, k: int) -> list[float]:
    return [20.0] * (n + rng.randint(0, k - 1))


def graham(rng: random.Random, n: int, k: int) -> list[float]:
    cells = [float(c) for c in range(2 * k - 1, k, -1) for _ in (0, 1)] + [float(k)] * 3
    rng.shuffle(cells)
    return cells


SETS: dict[str, Gen] = {
    "uniform": uniform,
    "heavy-tailed": heavy_tailed,
    "few-big": few_big,
    "equal": equal,
    "graham": graham,
}


def ratio(costs: list[float], queues: splitting.Assignment, bound: float) -> float:
    return max(splitting.loads_of(costs, queues)) / bound


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="sets per (kind, N, K)")
    parser.add_argument("--sizes", default="20,100,500", help="N values, comma-separated")
    parser.add_argument("--ks", default="2,4,8", help="K values, comma-separated")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ks = [int(s) for s in args.ks.split(",")]
    head = (
        f"{'set':<13}{'K':>3}{'N':>5}  {'round-robin':>15}  {'LPT':>15}  {'ours':>15}"
        f"  {'ours/pigeon':>11}  {'slowest':>8}"
    )
    print("makespan / max(total/K, largest cell): mean and worst over the seeds")
    print(head)
    worst_overall = 0.0
    sets_run: list[int] = []
    above: list[str] = []  # above the target against the plain bound
    misses: list[str] = []  # ... and against the pigeonhole bound: maybe the split's own gap
    for name, gen in SETS.items():
        for k in ks:
            for n in sizes if name != "graham" else [2 * k + 1]:
                rows: dict[str, list[float]] = {"rr": [], "lpt": [], "ours": [], "pig": []}
                slowest = 0.0
                for seed in range(args.seeds):
                    sets_run.append(seed)
                    costs = gen(random.Random(f"{name}-{k}-{n}-{seed}"), n, k)
                    b = splitting.bound(costs, k)
                    started = time.perf_counter()
                    ours = splitting.split(costs, k)
                    slowest = max(slowest, time.perf_counter() - started)
                    rows["rr"].append(ratio(costs, splitting.round_robin(costs, k), b))
                    rows["lpt"].append(ratio(costs, splitting.lpt(costs, k), b))
                    rows["ours"].append(ours.makespan / b)
                    rows["pig"].append(ours.makespan / splitting.pigeonhole_bound(costs, k))
                    where = f"{name} K={k} N={len(costs)} seed={seed}"
                    if ours.makespan / b > TARGET:
                        above.append(where)
                    if rows["pig"][-1] > TARGET:
                        misses.append(where)
                worst_overall = max(worst_overall, max(rows["ours"]))

                def cell(values: list[float]) -> str:
                    return f"{sum(values) / len(values):.3f} / {max(values):.3f}"

                print(
                    f"{name:<13}{k:>3}{n if name != 'graham' else 2 * k + 1:>5}  "
                    f"{cell(rows['rr']):>15}  {cell(rows['lpt']):>15}  {cell(rows['ours']):>15}"
                    f"  {max(rows['pig']):>11.3f}  {slowest * 1000:>6.1f}ms"
                )
    total = len(sets_run)
    print(f"\nworst ours: {worst_overall:.3f} x bound (target {TARGET}); {total} sets")
    print(f"{len(above)} set(s) above {TARGET} x max(total/K, largest cell)")
    print(f"{len(misses)} of them above {TARGET} x the pigeonhole bound too: {', '.join(misses)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
