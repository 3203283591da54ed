#!/usr/bin/env python3
"""Benchmark: the ledger at a year's size against a week's, through the real CLI, in two shapes.

- **big arrays** (``--shape arrays``): a ledger of 1,000 records against one of 100,000 (a year
  of 1,000-task arrays with per-task state records, ~31 MiB). Both track the same unfinished
  1,000-task array.
- **many jobs** (``--shape jobs``): 250 finished 4-task smoke jobs against 25,000 (an agent
  that smokes all day for a year: 100,000 records, four a job). Both track one unfinished
  4-task smoke.

Each shape builds its two campaigns with `campaign new` (local backend); the tracked job's id is
answered by the local backend from state files written under `.campaign/local/` (a recorded
state: no executor runs, the tasks stay as written). Then times, alternating, after one warm-up
run each:

- `campaign submit manifests/example.yaml --stage smoke --dry-run`
- `campaign status` (reads, renders nothing to a file)
- `campaign status --refresh` (a ledger a run appended to is restored before the next, so each
  run does the same work; one left unchanged is not rewritten, which would make git hash it
  again)

and prints the medians, the ratio big/small (target: at most 2x), and the big side's peak RSS
warm (its timed runs) and cold (each command's first run, the snapshot removed: the whole
ledger parsed, the snapshot written, as after a fresh clone or a merge that changed the
ledger's history; target for both: at most 200 MB), and the first runs' times. Never fails on
timing.

    python bench/ledger.py [--shape arrays|jobs|both] [--records N] [--small N] [--jobs N]
                           [--small-jobs N] [--repeat N] [--keep DIR] [--no-snapshot]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TARGET = 2.0
RSS_TARGET_MB = 200  # peak resident set at 100,000 records, warm or cold (issue 22)
TRACKED_ID = "local-9999-abcdef"
TRACKED_TASKS = 1000
ARRAY_TASKS = 1000
SMOKE_TARGETS = ("baseline_reconstruction", "baseline_segmentation", "wide_reconstruction")
# The many-jobs shape smokes all four of manifests/example.yaml's targets in every job.
EXAMPLE_TARGETS = (*SMOKE_TARGETS, "wide_segmentation")
START = dt.datetime(2025, 11, 24, tzinfo=dt.timezone.utc)
FP = "sha256:" + "ab" * 32
COMMIT = "c0ffee" * 6 + "c0ff"


def stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def line(record: dict[str, Any]) -> str:
    # The writer's own encoding (ledger_writer.encode), minus its schema check.
    return json.dumps(record, ensure_ascii=True, separators=(", ", ": "))


def head(kind: str, lid: str, when: dt.datetime) -> dict[str, Any]:
    return {"v": 1, "kind": kind, "ledger_id": lid, "time": stamp(when)}


def task(state: str, started: dt.datetime, ended: dt.datetime | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"state": state, "started": stamp(started)}
    if ended is not None:
        entry |= {"exit_code": 0, "ended": stamp(ended)}
        entry |= {"run_time_s": (ended - started).total_seconds()}
    return entry


def array_job(
    lid: str,
    when: dt.datetime,
    *,
    stage: str,
    targets: list[str],
    job_id: str,
    records: int,
    manifest: str = "manifests/example-queue.yaml",
    backend: str = "local",
) -> Iterator[str]:
    """One submission: intent, result, then ``records - 2`` state records. Each state record
    carries the tasks that changed since the last refresh (one per minute, 8 tasks at a time,
    ~10 minutes each): a task's start, then its end, spread evenly over the records."""
    size = len(targets)
    intent = head("intent", lid, when) | {
        "campaign": "bench",
        "backend": backend,
        "stage": stage,
        "targets": targets,
        "fingerprint": FP,
        "commit": COMMIT,
        "manifest": manifest,
        "name": f"bench-{stage}",
        "wrappers": {"scripts/run_one.v1.sh": FP},
    }
    if size > 1:
        intent |= {"array": f"0-{size - 1}%8", "fingerprints": dict.fromkeys(targets, FP)}
    yield line(intent)
    submitted = when + dt.timedelta(seconds=1)
    yield line(
        head("result", lid, submitted)
        | {"job_id": job_id, "submitted": stamp(submitted), "state": "PENDING"}
    )
    events = [(i, end) for i in range(size) for end in (False, True)]
    states = max(records - 2, 1)
    per = -(-len(events) // states)
    clock = submitted
    for n in range(states):
        chunk = events[n * per : (n + 1) * per]
        clock += dt.timedelta(minutes=1)
        last = n == states - 1
        rec = head("state", lid, clock) | {"job_id": job_id, "state": "RUNNING"}
        if last:
            rec |= {"state": "COMPLETED", "exit_code": 0, "ended": stamp(clock)}
        if size > 1 and chunk:
            started = clock - dt.timedelta(minutes=10)
            rec["tasks"] = {
                str(i): task("COMPLETED" if end else "RUNNING", started, clock if end else None)
                for i, end in chunk
            }
        yield line(rec)


def tracked(
    when: dt.datetime, targets: list[str], stage: str = "production"
) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The unfinished array (8 tasks running, the rest pending): its ledger lines, and the
    local backend's job.json and state.json that answer for it."""
    size = len(targets)
    lid = f"L{stamp(when).replace('-', '').replace(':', '')}-{'f' * 12}"
    lines = list(array_job(lid, when, stage=stage, targets=targets, job_id=TRACKED_ID, records=2))[
        :2
    ]
    started = when + dt.timedelta(minutes=1)
    tasks = [
        {"index": i, "state": "RUNNING", "started": stamp(started)}
        if i < 8
        else {"index": i, "state": "PENDING"}
        for i in range(size)
    ]
    # Record in the ledger exactly what the backend will say, so a refresh has nothing to add.
    state = head("state", lid, started) | {"job_id": TRACKED_ID, "state": "RUNNING"}
    state["tasks"] = {str(t["index"]): {k: v for k, v in t.items() if k != "index"} for t in tasks}
    lines.append(line(state))
    job = {
        "name": f"bench-{stage}",
        "comment": f"{lid} {COMMIT}",
        "timelimit": "1-00:00:00",
        "submitted": stamp(when + dt.timedelta(seconds=1)),
        "size": size,
    }
    return lines, job, {"job_id": TRACKED_ID, "state": "RUNNING", "tasks": tasks}


def history(records: int) -> Iterator[str]:
    """Finished submissions over a year until ``records`` lines: every tenth a production
    array of 1,000 queue cells (~1,250 records), the others smokes of three example targets."""
    left, n = records, 0
    step = dt.timedelta(days=363) / max(records, 1)  # the year, spread over its records
    when = START
    while left > 0:
        lid = f"L{stamp(when).replace('-', '').replace(':', '')}-{n:012x}"
        job_id = f"local-{n + 1}-{n % 0xFFFFFF:06x}"
        if n % 10 == 9 and left > 2 * ARRAY_TASKS:
            grid = n % 4
            targets = [f"q{grid}-{i:04d}" for i in range(ARRAY_TASKS)]
            size = min(left, ARRAY_TASKS * 5 // 4)
            yield from array_job(
                lid, when, stage="production", targets=targets, job_id=job_id, records=size
            )
        else:
            size = min(left, 5)
            yield from array_job(
                lid,
                when,
                stage="smoke",
                targets=list(SMOKE_TARGETS),
                job_id=job_id,
                records=size,
                manifest="manifests/example.yaml",
            )
        left -= size
        n += 1
        when += step * size


def smokes(jobs: int) -> Iterator[str]:
    """``jobs`` finished smokes of the example's four targets over a year, four records each
    (intent, result, running, completed with each task's end): an agent's daily loop."""
    step = dt.timedelta(days=363) / max(jobs, 1)
    for n in range(jobs):
        when = START + step * n
        lid = f"L{stamp(when).replace('-', '').replace(':', '')}-{n:012x}"
        yield from array_job(
            lid,
            when,
            stage="smoke",
            targets=list(EXAMPLE_TARGETS),
            job_id=f"local-{n + 1}-{n % 0xFFFFFF:06x}",
            records=4,
            manifest="manifests/example.yaml",
        )


def git(root: Path, *args: str) -> None:
    identity = ("-c", "user.name=bench", "-c", "user.email=bench@example.org")
    subprocess.run(["git", *identity, *args], cwd=root, check=True, capture_output=True)


def campaign(base: Path, shape: str, size: int) -> Path:
    """A campaign whose ledger is ``size`` records (arrays) or ``size`` finished jobs (jobs)."""
    root = base / f"{shape}-{size}"
    subprocess.run(
        # No upstream here: without require_pushed every gate passes and the dry run exits 0.
        [sys.executable, "-m", "campaignops", "new", str(root), "--defaults", *NO_UPSTREAM],
        check=True,
        capture_output=True,
    )
    when = START + dt.timedelta(days=364)
    if shape == "arrays":
        live, job, state = tracked(when, [f"live-{i:04d}" for i in range(TRACKED_TASKS)])
        body = list(history(size - len(live))) + live
    else:
        live, job, state = tracked(when, list(EXAMPLE_TARGETS), stage="smoke")
        body = list(smokes(size)) + live
    (root / ".campaign/ledger.jsonl").write_text("".join(f"{x}\n" for x in body))
    local = root / ".campaign/local" / TRACKED_ID
    local.mkdir(parents=True)
    (local / "job.json").write_text(json.dumps(job))
    (local / "state.json").write_text(json.dumps(state))
    run(root, "render")
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"a ledger of {size} {shape}")
    return root


NO_UPSTREAM = ("--data", "require_pushed=no")
COMMANDS = {
    "submit --dry-run": ["submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run"],
    "status": ["status"],
    "status --refresh": ["status", "--refresh"],
}


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bindir = Path(sys.executable).parent
    return subprocess.run(
        [str(bindir / "campaign"), *args], cwd=root, capture_output=True, text=True, check=False
    )


@dataclasses.dataclass(frozen=True)
class Timed:
    seconds: float
    code: int
    rss_mib: float  # the process's peak resident set


# The command run in-process by a small Python that reports its own peak resident set at exit
# (VmHWM: of this program's memory since exec). wait4's ru_maxrss would also count the pages a
# child shares with this benchmark between its fork and exec: the ledgers held here.
RUN_AND_MEASURE = """
import os, sys
from campaignops.cli import main
try:
    code = main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status, open(os.environ["BENCH_HWM"], "w") as out:
        out.write("".join(line for line in status if line.startswith("VmHWM:")))
sys.exit(code)
"""


def timed(root: Path, args: list[str], ledger: bytes) -> Timed:
    # The same work every run: a ledger a run appended to is restored. One left as it was is
    # not rewritten: a rewrite makes git hash the whole file again (git status, the committed
    # gate), work no unchanged ledger costs.
    path = root / ".campaign/ledger.jsonl"
    if path.read_bytes() != ledger:
        path.write_bytes(ledger)
    with tempfile.TemporaryDirectory() as scratch:
        hwm = Path(scratch) / "hwm"
        env = os.environ | {"BENCH_HWM": str(hwm)}
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", RUN_AND_MEASURE, *args],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        elapsed = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr.decode()}")
        found = hwm.read_text().split() if hwm.exists() else []
        rss = int(found[1]) / 1024 if len(found) > 1 else float("nan")  # VmHWM: N kB
    return Timed(seconds=elapsed, code=done.returncode, rss_mib=rss)


SHAPES = {
    "arrays": "big arrays: {small:,} against {big:,} records (1,000-task arrays)",
    "jobs": "many jobs: {small:,} against {big:,} finished 4-task smoke jobs (4 records each)",
}


def measure(sides: dict[int, Path], repeat: int, no_snapshot: bool, names: str) -> None:
    """Each command's medians on both sides, their ratio, the big side's peak RSS."""
    small_n, big_n = sides
    ledgers = {n: (r / ".campaign/ledger.jsonl").read_bytes() for n, r in sides.items()}
    cache = [".git/campaignops"] if no_snapshot else []
    for label, argv in COMMANDS.items():
        runs: dict[int, list[Timed]] = {n: [] for n in sides}
        first: dict[int, Timed] = {}
        for i in range(repeat + 1):
            for n, root in sides.items():
                for rel in cache if i else [".git/campaignops"]:
                    shutil.rmtree(root / rel, ignore_errors=True)
                done = timed(root, argv, ledgers[n])
                if i:
                    runs[n].append(done)
                else:  # a warm-up, after the snapshot was removed: a cold read
                    first[n] = done
        small, big = (statistics.median(t.seconds for t in runs[n]) for n in sides)
        rss = max(t.rss_mib for t in runs[big_n])
        verdict = "meets" if big <= TARGET * small else "MISSES"
        codes = f"{runs[small_n][-1].code}/{runs[big_n][-1].code}"
        cold = first[big_n].rss_mib
        worst_mb = max(rss, cold) * 2**20 / 1e6
        memory = "meets" if worst_mb <= RSS_TARGET_MB else "MISSES"
        print(
            f"campaign {label}: {small_n:,} {names} {small:.3f}s, {big_n:,} {names} {big:.3f}s, "
            f"ratio {big / small:.2f} (target <= {TARGET:g}: {verdict}); exit {codes}; "
            f"peak RSS warm {rss:.0f} MiB, cold {cold:.0f} MiB "
            f"(target <= {RSS_TARGET_MB} MB: {memory})"
        )
        print(
            f"  first run, no snapshot (parses all, writes the snapshot): "
            f"{first[small_n].seconds:.3f}s / {first[big_n].seconds:.3f}s"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=("arrays", "jobs", "both"), default="both")
    parser.add_argument("--records", type=int, default=100_000, help="big arrays (100000)")
    parser.add_argument("--small", type=int, default=1_000, help="small arrays (1000)")
    parser.add_argument("--jobs", type=int, default=25_000, help="many jobs (25000)")
    parser.add_argument("--small-jobs", type=int, default=250, help="few jobs (250)")
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="timed runs (5)")
    parser.add_argument("--keep", type=Path, help="build the campaigns here and keep them")
    parser.add_argument(
        "--no-snapshot",
        action="store_true",
        help="remove the ledger snapshot before each run (every run parses the whole ledger)",
    )
    args = parser.parse_args()
    sizes = {"arrays": (args.small, args.records), "jobs": (args.small_jobs, args.jobs)}
    shapes = ("arrays", "jobs") if args.shape == "both" else (args.shape,)
    base = args.keep or Path(tempfile.mkdtemp(prefix="ledger-bench-"))
    try:
        for shape in shapes:
            small, big = sizes[shape]
            print(f"== {SHAPES[shape].format(small=small, big=big)}")
            sides = {n: campaign(base, shape, n) for n in (small, big)}
            for root in sides.values():
                size = (root / ".campaign/ledger.jsonl").stat().st_size
                lines = (root / ".campaign/ledger.jsonl").read_bytes().count(b"\n")
                print(f"ledger: {lines:,} records, {size / 2**20:.1f} MiB, {root}")
            print(
                f"tracked: {TRACKED_ID}, unfinished, answered by the local backend from "
                "recorded state files (.campaign/local/), no executor running"
            )
            names = "records" if shape == "arrays" else "jobs"
            measure(sides, args.repeat, args.no_snapshot, names)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
