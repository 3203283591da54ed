#!/usr/bin/env python3
"""Benchmark: `campaign new DIR --defaults` (render + git init + first commit) against 3 s.

Runs the real CLI as a subprocess, both engines side by side, several repetitions, medians;
prints each median and its ratio to the 3 s target. Never fails on timing.

    python bench/new.py [--repeat N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 3.0


def once(engine: str, base: Path, i: int) -> float:
    dest = base / f"{engine}-{i}" / "bench-campaign"
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "campaignops", "new", str(dest), "--defaults", "--engine", engine],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - start
    shutil.rmtree(dest.parent)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="runs per engine (5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for engine in ("copier", "cookiecutter"):
            once(engine, base, -1)  # warm-up: bytecode, file cache
        times: dict[str, list[float]] = {"copier": [], "cookiecutter": []}
        for i in range(args.repeat):
            for engine in times:  # alternate, so load on the machine hits both alike
                times[engine].append(once(engine, base, i))
    print(f"campaign new DIR --defaults: {args.repeat} runs per engine, medians")
    for engine, runs in times.items():
        med = statistics.median(runs)
        verdict = "meets" if med <= TARGET_S else "MISSES"
        runs_s = ", ".join(f"{t:.2f}" for t in runs)
        print(
            f"  {engine:<13} {med:.2f}s  ratio to {TARGET_S:.0f} s target: {med / TARGET_S:.2f}"
            f"  ({verdict})  runs: {runs_s}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
