#!/usr/bin/env python3
"""Benchmarks on a real Grid Engine cell (as root: dev/gridengine_cell.py installs and starts one).

1. Fan-out: 1,000 cells as ONE array job (the backend's render + one ``qsub -terse`` call)
   against a loop of 1,000 qsub calls (each held, so none runs); prints the calls made, wall
   time of each, and the ratio (target: one submission call, >= 50x faster).
2. Status: a ledger tracking the array's 1,000 tasks (held: every one is in qstat's answer);
   ``status.refresh`` with every scheduler call counted (target: 1 qstat + <= 1 qacct) and timed.
Never fails on timing. The Slurm benchmarks are bench/slurm.py; the same parts, the same targets.

    python bench/gridengine.py [--cells N]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from campaignops.backends import command as scheduler
from campaignops.backends.gridengine.backend import GridEngineBackend
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobSpec, Resources
from campaignops.runner import status

ROOT = Path(__file__).resolve().parents[1]
PAGE = "---\nplatform: sge-bench\nkind: gridengine\nscheduler: gridengine\nverified: 2026-11\n---\n"


def cell_module():  # type: ignore[no-untyped-def]
    path = ROOT / "dev/gridengine_cell.py"
    spec = importlib.util.spec_from_file_location("gridengine_cell", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Counter:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, argv: Sequence[str]) -> scheduler.Call:
        self.calls.append(argv[0] if argv[0] != "env" else argv[2])
        return scheduler.call(argv, answered=frozenset({1}))


def _campaign(work: Path) -> Path:
    camp = work / "campaign"
    (camp / "backends").mkdir(parents=True)
    (camp / "campaign.yaml").write_text("name: bench\nbackends: [sge-bench]\n")
    (camp / "backends/sge-bench.md").write_text(PAGE)
    return camp


def _track(camp: Path, job_id: str, n: int) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    lid = lw.new_ledger_id(now)
    intent = lw.intent_record(
        ledger_id=lid,
        time=now,
        campaign="bench",
        backend="sge-bench",
        stage="production",
        targets=[f"c{i}" for i in range(n)],
        fingerprint="sha256:" + "0" * 64,
        commit="0" * 40,
        manifest="manifests/bench.yaml",
        name="bench.cells.production",
    )
    result = lw.result_record(
        ledger_id=lid, time=now, job_id=job_id, submitted=now, state="PENDING"
    )
    lw.append(camp, [intent, result])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1000, help="cells / jobs (1000)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/gridengine.py needs root: it starts a Grid Engine cell", file=sys.stderr)
        return 2
    dev = cell_module()
    dev.install()
    base = Path(tempfile.mkdtemp(prefix="campaignops-sge-bench-"))
    cell = dev.start(base)
    os.environ.update(cell.env)
    work = Path(tempfile.mkdtemp(prefix="campaignops-bench-"))
    work.chmod(0o755)
    (work / "logs").mkdir()
    camp = _campaign(work)
    be = GridEngineBackend(camp, "sge-bench")
    try:
        n = args.cells
        spec = JobSpec(
            name="bench.cells.production",
            workdir=str(work),
            tasks=tuple("true" for _ in range(n)),
            max_parallel=8,
            resources=Resources(time="00:05:00", mem="10M"),
        )
        script = work / "array.sh"
        script.write_text(be.render(spec))
        count = Counter()
        t0 = time.perf_counter()
        # Held (-h), so the status part finds all 1,000 tasks waiting in qstat's answer.
        array_id = be.parse_job_id(count(["qsub", "-terse", "-h", str(script)]).stdout)
        array_s = time.perf_counter() - t0
        array_calls = len(count.calls)
        loop_ids = []
        t0 = time.perf_counter()
        for i in range(n):
            out = subprocess.run(
                ["qsub", "-terse", "-h", "-b", "y", "-N", f"bench.c{i}.production",
                 "-l", "h_rt=00:05:00", "-cwd", "-o", "/dev/null", "-j", "y", "true"],
                cwd=work, capture_output=True, text=True, check=True,
            )  # fmt: skip
            loop_ids.append(be.parse_job_id(out.stdout))
        loop_s = time.perf_counter() - t0
        print(f"fan-out of {n} cells on Grid Engine ({cell.host}):")
        print(f"  one array job:       {array_calls} qsub call,   {array_s:.3f} s")
        print(f"  loop of qsub:        {n} qsub calls, {loop_s:.3f} s")
        print(f"  ratio loop/array:    {loop_s / array_s:.0f}x  (target >= 50x)")
        subprocess.run(["qdel", *loop_ids], check=False, capture_output=True)
        _track(camp, array_id, n)
        count = Counter()
        t0 = time.perf_counter()
        status.refresh(root=camp, call=count)
        refresh_s = time.perf_counter() - t0
        print(
            f"status refresh of an array of {n} tasks: {len(count.calls)} scheduler calls "
            f"({', '.join(count.calls)}), {refresh_s:.3f} s (target: 1 qstat + <= 1 qacct)"
        )
        subprocess.run(["qdel", array_id], check=False, capture_output=True)
    finally:
        cell.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
