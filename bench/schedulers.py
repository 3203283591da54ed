#!/usr/bin/env python3
"""Benchmarks on a real Slurm cluster (as root: dev/slurm_cluster.py installs and starts one).

1. Fan-out: 1,000 cells as ONE array job (the runner's render + one sbatch call) against a loop
   of 1,000 sbatch calls; prints scheduler calls made, wall time of each, and the ratio
   (target: one submission call, >= 50x faster).
2. Status: a campaign ledger tracking the 1,000 jobs of the loop; `status.refresh` with every
   scheduler call counted (target: 1 accounting query + <= 1 queue query) and timed.
3. The whole path for a queue file: a campaign from `campaign new` with a 1,000-line queue file
   and its manifest, committed, then `campaign submit`'s library call (the six gates, 1,000
   fingerprints, the ledger, the wrapper lock, STATUS.md) with every scheduler call counted
   (target: one sibling query and one sbatch call), timed against the loop of part 1.
Never fails on timing.

    python bench/slurm.py [--cells N]
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
from campaignops.backends.slurm import backend as slurm
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobSpec, Resources
from campaignops.runner import status

ROOT = Path(__file__).resolve().parents[1]


def cluster_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("slurm_cluster", ROOT / "dev/slurm_cluster.py")
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
        return scheduler.call(argv)


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


def submit_a_queue(work: Path, n: int) -> tuple[float, list[str], str]:
    """A fresh campaign whose queue file has ``n`` cells, submitted through the gates."""
    from campaignops.runner import submit

    camp = work / "queue-campaign"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "campaignops",
            "new",
            str(camp),
            "--defaults",
            "--data",
            "backends=generic-slurm,local",
            "--data",
            "smoke_backend=generic-slurm",
            "--data",
            "require_pushed=no",
        ],
        check=True,
        capture_output=True,
    )
    lines = "".join(f"configs/bench/c{i}.yaml train {1 + i % 50}\n" for i in range(n))
    (camp / "queues/bench.txt").write_text(lines)
    (camp / "manifests/bench-queue.yaml").write_text(QUEUE_MANIFEST)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a queue of cells")
    count = Counter()
    t0 = time.perf_counter()
    ask = submit.Ask(manifest="manifests/bench-queue.yaml", stage="smoke")
    outcome = submit.submit(root=camp, ask=ask, call=count)
    elapsed = time.perf_counter() - t0
    return elapsed, count.calls, outcome.submitted[0].job_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1000, help="cells / jobs (1000)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/slurm.py needs root: it starts a Slurm cluster", file=sys.stderr)
        return 2
    dev = cluster_module()
    dev.install()
    base = Path(tempfile.mkdtemp(prefix="campaignops-slurm-bench-"))
    cluster = dev.start(base)
    os.environ["SLURM_CONF"] = str(cluster.conf)
    work = Path(tempfile.mkdtemp(prefix="campaignops-bench-"))
    (work / "logs").mkdir()
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
        script.write_text(slurm.render(spec))
        count = Counter()
        t0 = time.perf_counter()
        array_id = slurm.parse_job_id(count(slurm.submit_argv(str(script))).stdout)
        array_s = time.perf_counter() - t0
        array_calls = len(count.calls)
        subprocess.run(["scancel", array_id], check=False)
        loop_ids = []
        t0 = time.perf_counter()
        for i in range(n):
            out = subprocess.run(
                [
                    "sbatch",
                    "--parsable",
                    "--hold",
                    f"--job-name=bench.c{i}.production",
                    "--time=00:05:00",
                    "--mem=10M",
                    f"--chdir={work}",
                    "--output=logs/%j.out",
                    "--wrap=true",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            loop_ids.append(slurm.parse_job_id(out.stdout))
        loop_s = time.perf_counter() - t0
        print(f"fan-out of {n} cells on Slurm {cluster.name}:")
        print(f"  one array job:       {array_calls} sbatch call,   {array_s:.3f} s")
        print(f"  loop of sbatch:      {n} sbatch calls, {loop_s:.3f} s")
        print(f"  ratio loop/array:    {loop_s / array_s:.0f}x  (target >= 50x)")

        camp = work / "campaign"
        (camp / "backends").mkdir(parents=True)
        (camp / "campaign.yaml").write_text("name: bench\nbackends: [slurm-bench]\n")
        (camp / "backends/slurm-bench.md").write_text(
            "---\nplatform: slurm-bench\nkind: slurm\nscheduler: slurm\nverified: 2026-11\n---\n"
        )
        now = dt.datetime.now(dt.timezone.utc)
        records = []
        for i, job_id in enumerate(loop_ids):
            lid = lw.new_ledger_id(now)
            records.append(
                lw.intent_record(
                    ledger_id=lid,
                    time=now,
                    campaign="bench",
                    backend="slurm-bench",
                    stage="production",
                    targets=[f"c{i}"],
                    fingerprint="sha256:" + "0" * 64,
                    commit="0" * 40,
                    manifest="manifests/bench.yaml",
                    name=f"bench.c{i}.production",
                )
            )
            records.append(
                lw.result_record(
                    ledger_id=lid, time=now, job_id=job_id, submitted=now, state="PENDING"
                )
            )
        lw.append(camp, records)
        count = Counter()
        t0 = time.perf_counter()
        done = status.refresh(root=camp, call=count)
        refresh_s = time.perf_counter() - t0
        print(
            f"status refresh of {n} tracked jobs: {len(count.calls)} scheduler calls "
            f"({', '.join(count.calls)}), {refresh_s:.3f} s, {len(done.changed)} state changes "
            "(target: 1 accounting + <= 1 queue query)"
        )
        subprocess.run(["scancel", *loop_ids], check=False, capture_output=True)
        queue_s, calls, job_id = submit_a_queue(work, n)
        subprocess.run(["scancel", job_id], check=False)
        print(
            f"campaign submit of a {n}-line queue file: {len(calls)} scheduler calls "
            f"({', '.join(calls)}), {queue_s:.3f} s; loop of sbatch / submit: "
            f"{loop_s / queue_s:.0f}x  (target: one sbatch call)"
        )
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
