#!/usr/bin/env python3
"""Benchmarks on the real schedulers, side by side: a Slurm cluster and a Grid Engine cell.

As root: dev/slurm_cluster.py and dev/gridengine_cell.py install and start each in its own
directory; both stop at the end. For each scheduler:

1. Fan-out: 1,000 cells as ONE array job (the backend's render + one submission call) against a
   loop of 1,000 submission calls (each held, so none runs); prints the calls made, the wall time
   of each and the ratio (target: one submission call, >= 50x faster).
2. Status: a campaign ledger tracking 1,000 tasks; ``status.refresh`` with every scheduler call
   counted (target: 1 accounting query + <= 1 queue query) and timed. Slurm tracks the loop's
   1,000 jobs; Grid Engine one held array of 1,000 tasks (every task in qstat's answer).
3. Slurm only: ``campaign submit`` of a 1,000-line queue file through the six gates (1,000
   fingerprints, the ledger, the wrapper lock, STATUS.md) with its scheduler calls counted
   (target: one sibling query and one sbatch call), timed against the loop of part 1.
Ends with one table of both schedulers. Never fails on timing.

    python bench/schedulers.py [--cells N] [--only slurm|gridengine]
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from campaignops.backends import command as scheduler
from campaignops.backends.gridengine.backend import GridEngineBackend
from campaignops.backends.slurm import backend as slurm
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobSpec, Resources
from campaignops.runner import status, submit

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Result:
    """One scheduler's figures, for the closing table."""

    scheduler: str
    array_calls: int
    array_s: float
    loop_s: float
    refresh_calls: tuple[str, ...]
    refresh_s: float


def dev_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / f"dev/{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class Counter:
    """A scheduler call that records the command's name before it runs."""

    def __init__(self, answered: frozenset[int] = frozenset()) -> None:
        self.calls: list[str] = []
        self.answered = answered

    def __call__(self, argv: Sequence[str]) -> scheduler.Call:
        self.calls.append(argv[0] if argv[0] != "env" else argv[2])
        return scheduler.call(argv, answered=self.answered)


def spec_of(work: Path, n: int) -> JobSpec:
    return JobSpec(
        name="bench.cells.production",
        workdir=str(work),
        tasks=tuple("true" for _ in range(n)),
        max_parallel=8,
        resources=Resources(time="00:05:00", mem="10M"),
    )


def campaign_of(work: Path, page: str, kind: str) -> Path:
    """A bare campaign with one backend page, enough for ``status.refresh``."""
    camp = work / f"campaign-{kind}"
    (camp / "backends").mkdir(parents=True)
    (camp / "campaign.yaml").write_text(f"name: bench\nbackends: [{page}]\n")
    (camp / f"backends/{page}.md").write_text(
        f"---\nplatform: {page}\nkind: {kind}\nscheduler: {kind}\nverified: 2026-11\n---\n"
    )
    return camp


def track(camp: Path, page: str, jobs: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Ledger records for jobs already submitted: (job id, its targets) each."""
    now = dt.datetime.now(dt.timezone.utc)
    records = []
    for job_id, targets in jobs:
        lid = lw.new_ledger_id(now)
        records.append(
            lw.intent_record(
                ledger_id=lid,
                time=now,
                campaign="bench",
                backend=page,
                stage="production",
                targets=list(targets),
                fingerprint="sha256:" + "0" * 64,
                commit="0" * 40,
                manifest="manifests/bench.yaml",
                name="bench.cells.production",
            )
        )
        records.append(
            lw.result_record(ledger_id=lid, time=now, job_id=job_id, submitted=now, state="PENDING")
        )
    lw.append(camp, records)


def timed(action: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    action()
    return time.perf_counter() - t0


def refresh(camp: Path, answered: frozenset[int] = frozenset()) -> tuple[tuple[str, ...], float]:
    count = Counter(answered)
    seconds = timed(lambda: status.refresh(root=camp, call=count))
    return tuple(count.calls), seconds


def fanout_lines(name: str, verb: str, r: Result, n: int) -> list[str]:
    return [
        f"fan-out of {n} cells on {name}:",
        f"  one array job:       {r.array_calls} {verb} call,   {r.array_s:.3f} s",
        f"  loop of {verb}:{' ' * (12 - len(verb))}{n} {verb} calls, {r.loop_s:.3f} s",
        f"  ratio loop/array:    {r.loop_s / r.array_s:.0f}x  (target >= 50x)",
    ]


def slurm_loop(work: Path, n: int) -> list[str]:
    ids = []
    for i in range(n):
        out = subprocess.run(
            ["sbatch", "--parsable", "--hold", f"--job-name=bench.c{i}.production",
             "--time=00:05:00", "--mem=10M", f"--chdir={work}", "--output=logs/%j.out",
             "--wrap=true"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        ids.append(slurm.parse_job_id(out.stdout))
    return ids


def bench_slurm(work: Path, n: int) -> Result:
    script = work / "array.sh"
    script.write_text(slurm.render(spec_of(work, n)))
    count = Counter()
    ids: list[str] = []
    array_s = timed(
        lambda: ids.append(slurm.parse_job_id(count(slurm.submit_argv(str(script))).stdout))
    )
    subprocess.run(["scancel", ids[0]], check=False)
    loop_ids: list[str] = []
    loop_s = timed(lambda: loop_ids.extend(slurm_loop(work, n)))
    camp = campaign_of(work, "slurm-bench", "slurm")
    track(camp, "slurm-bench", [(job_id, [f"c{i}"]) for i, job_id in enumerate(loop_ids)])
    calls, refresh_s = refresh(camp)
    subprocess.run(["scancel", *loop_ids], check=False, capture_output=True)
    return Result("Slurm", len(count.calls), array_s, loop_s, calls, refresh_s)


QUEUE_MANIFEST = """\
project: bench
queue: queues/bench.txt
default_cmd: bash scripts/run_one.v1.sh
backend: generic-slurm
max_parallel: 8
resources: {time: "00:05:00", mem: 10M}
smoke: {args: {epochs: 1}}
"""


def git(root: Path, *args: str) -> None:
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run(["git", *identity, *args], cwd=root, check=True, capture_output=True)


def submit_a_queue(work: Path, n: int) -> tuple[float, list[str]]:
    """A fresh campaign whose queue file has ``n`` cells, submitted through the gates."""
    camp = work / "queue-campaign"
    subprocess.run(
        [sys.executable, "-m", "campaignops", "new", str(camp), "--defaults",
         "--data", "backends=generic-slurm,local", "--data", "smoke_backend=generic-slurm",
         "--data", "require_pushed=no"],
        check=True, capture_output=True,
    )  # fmt: skip
    lines = "".join(f"configs/bench/c{i}.yaml train {1 + i % 50}\n" for i in range(n))
    (camp / "queues/bench.txt").write_text(lines)
    # The gates refuse a queue line whose config is not committed: the configs exist, as a user's.
    (camp / "configs/bench").mkdir(parents=True)
    for i in range(n):
        (camp / f"configs/bench/c{i}.yaml").write_text(f"seed: {i}\n")
    (camp / "manifests/bench-queue.yaml").write_text(QUEUE_MANIFEST)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a queue of cells")
    count = Counter()
    ask = submit.Ask(manifest="manifests/bench-queue.yaml", stage="smoke")
    outcomes: list[submit.Outcome] = []
    seconds = timed(lambda: outcomes.append(submit.submit(root=camp, ask=ask, call=count)))
    subprocess.run(["scancel", str(outcomes[0].submitted[0].job_id)], check=False)
    return seconds, count.calls


def gridengine_loop(work: Path, be: GridEngineBackend, n: int) -> list[str]:
    ids = []
    for i in range(n):
        out = subprocess.run(
            ["qsub", "-terse", "-h", "-b", "y", "-N", f"bench.c{i}.production",
             "-l", "h_rt=00:05:00", "-cwd", "-o", "/dev/null", "-j", "y", "true"],
            cwd=work, capture_output=True, text=True, check=True,
        )  # fmt: skip
        ids.append(be.parse_job_id(out.stdout))
    return ids


def bench_gridengine(work: Path, n: int) -> Result:
    camp = campaign_of(work, "sge-bench", "gridengine")
    be = GridEngineBackend(camp, "sge-bench")
    script = work / "array.sh"
    script.write_text(be.render(spec_of(work, n)))
    # qsub answers 1 for a refused submission; the counter keeps that an answer, not a crash.
    count = Counter(answered=frozenset({1}))
    ids: list[str] = []
    # Held (-h), so the status part finds all the tasks waiting in qstat's answer.
    argv = ["qsub", "-terse", "-h", str(script)]
    array_s = timed(lambda: ids.append(be.parse_job_id(count(argv).stdout)))
    loop_ids: list[str] = []
    loop_s = timed(lambda: loop_ids.extend(gridengine_loop(work, be, n)))
    subprocess.run(["qdel", *loop_ids], check=False, capture_output=True)
    track(camp, "sge-bench", [(ids[0], [f"c{i}" for i in range(n)])])
    calls, refresh_s = refresh(camp, answered=frozenset({1}))
    subprocess.run(["qdel", ids[0]], check=False, capture_output=True)
    return Result("Grid Engine", len(count.calls), array_s, loop_s, calls, refresh_s)


def run_slurm(n: int) -> Result:
    dev = dev_module("slurm_cluster")
    dev.install()
    cluster = dev.start(Path(tempfile.mkdtemp(prefix="campaignops-slurm-bench-")))
    os.environ["SLURM_CONF"] = str(cluster.conf)
    work = Path(tempfile.mkdtemp(prefix="campaignops-bench-"))
    (work / "logs").mkdir()
    try:
        r = bench_slurm(work, n)
        print("\n".join(fanout_lines(f"Slurm {cluster.name}", "sbatch", r, n)))
        print(
            f"status refresh of {n} tracked jobs: {len(r.refresh_calls)} scheduler calls "
            f"({', '.join(r.refresh_calls)}), {r.refresh_s:.3f} s "
            "(target: 1 accounting + <= 1 queue query)"
        )
        queue_s, calls = submit_a_queue(work, n)
        print(
            f"campaign submit of a {n}-line queue file: {len(calls)} scheduler calls "
            f"({', '.join(calls)}), {queue_s:.3f} s; loop of sbatch / submit: "
            f"{r.loop_s / queue_s:.0f}x  (target: one sbatch call)"
        )
        return r
    finally:
        cluster.stop()


def run_gridengine(n: int) -> Result:
    dev = dev_module("gridengine_cell")
    dev.install()
    cell = dev.start(Path(tempfile.mkdtemp(prefix="campaignops-sge-bench-")))
    saved = dict(os.environ)
    os.environ.update(cell.env)
    work = Path(tempfile.mkdtemp(prefix="campaignops-bench-"))
    work.chmod(0o755)  # the cell's execd writes the held jobs' logs as the submitting user
    (work / "logs").mkdir()
    try:
        r = bench_gridengine(work, n)
        print("\n".join(fanout_lines(f"Grid Engine ({cell.host})", "qsub", r, n)))
        print(
            f"status refresh of an array of {n} tasks: {len(r.refresh_calls)} scheduler calls "
            f"({', '.join(r.refresh_calls)}), {r.refresh_s:.3f} s (target: 1 qstat + <= 1 qacct)"
        )
        return r
    finally:
        cell.stop()
        os.environ.clear()
        os.environ.update(saved)


def table(results: Sequence[Result], n: int) -> list[str]:
    rows = [
        f"| {n:,} cells | one array job | loop of submissions | ratio | refresh calls | refresh |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.scheduler} | {r.array_calls} call, {r.array_s:.3f} s | {n} calls, "
            f"{r.loop_s:.1f} s | **{r.loop_s / r.array_s:.0f}x** | "
            f"{len(r.refresh_calls)} ({', '.join(r.refresh_calls)}) | {r.refresh_s:.2f} s |"
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1000, help="cells / jobs (1000)")
    parser.add_argument(
        "--only", choices=("slurm", "gridengine"), help="one scheduler (default: both)"
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/schedulers.py needs root: it starts a Slurm cluster", file=sys.stderr)
        return 2
    results = []
    if args.only in (None, "slurm"):
        results.append(run_slurm(args.cells))
    if args.only in (None, "gridengine"):
        results.append(run_gridengine(args.cells))
    print()
    print("\n".join(table(results, args.cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
