"""The cluster-optimise figures of audit resources: CPU and GPU efficiency, throughput, failure
rate, and a ``%C`` (array concurrency) suggestion, per manifest (phase) and stage.

Pure: each finished task's ``Usage`` is read from the ledger (what status --refresh recorded
from the accounting: sacct's TotalCPU, AllocCPUS and AllocTRES on Slurm; start and end on every
backend), and a figure is given only where the accounting has its fields (else None, shown
"—"). The rules and thresholds are in docs/runner.md ("Right-sizing") and docs/decisions.md
("(efficiency) ...").

- CPU efficiency: CPU time used over CPU time held, Σ TotalCPU / Σ (run time × AllocCPUS), of
  completed tasks (Princeton jobstats' and seff's figure).
- GPU: the GPU-hours held (AllocTRES gres/gpu × run time); sacct has no GPU utilisation in the
  fields read, so no GPU efficiency is claimed.
- Throughput: completed tasks per hour, from the first start to the last end.
- Failure rate: failed tasks over finished ones (a cancelled task is neither).
- ``%C``: the most tasks of one array that ran at once, against the cap it was submitted with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from campaignops.model.ledger import Job, Task, parse_time
from campaignops.model.states import FINISHED

CPU_LOW = 0.50  # below: the CPUs asked for sat mostly idle (jobstats' CPU efficiency alert)
FAIL_FAST = 0.25  # at or above: fix before scaling (cluster-optimise: "fail fast")
MIN_ARRAY = 3  # an array smaller than this says nothing of its cap
_CAP = re.compile(r"%([0-9]{1,6})$")


@dataclass(frozen=True)
class Usage:
    """One finished task's accounting: when it ran, what it held and used."""

    job: str  # the ledger id: tasks of one array share it
    array_cap: int | None  # the %C the array was submitted with
    array_size: int
    succeeded: bool
    failed: bool
    started: float | None  # epoch seconds
    ended: float | None
    run_time_s: float | None
    cpu_time_s: float | None
    alloc_cpus: int | None
    alloc_gpus: int | None


def finished_tasks(job: Job) -> Iterator[tuple[Task, str]]:
    """Every finished task of ``job`` with its final state, each target once (a repeated
    target is one task): what the resources audit reads, here and in right-sizing."""
    for target in dict.fromkeys(job.targets):
        task = job.task(target)
        if task is not None and task.state in FINISHED:
            yield task, task.state


def usages(job: Job) -> list[Usage]:
    """Every finished task of ``job``, each target once, after each attempt its box executor
    ran again (``Task.tries``)."""
    found = _CAP.search(job.text("array") or "")
    cap = int(found[1]) if found else None
    out: list[Usage] = []
    for last, _ in finished_tasks(job):
        out += [_usage(job, task, cap) for task in (*last.tries, last)]
    return out


def _usage(job: Job, task: Task, cap: int | None) -> Usage:
    started, ended = parse_time(task.started), parse_time(task.ended)
    run = task.run_time_s
    if run is None and started and ended and ended >= started:
        run = (ended - started).total_seconds()
    return Usage(
        job=job.ledger_id,
        array_cap=cap,
        array_size=len(job.targets),
        succeeded=task.succeeded,
        failed=not task.succeeded and task.state != "CANCELLED",
        started=started.timestamp() if started else None,
        ended=ended.timestamp() if ended else None,
        run_time_s=run,
        cpu_time_s=task.cpu_time_s,
        alloc_cpus=task.alloc_cpus,
        alloc_gpus=task.alloc_gpus,
    )


@dataclass(frozen=True)
class Concurrency:
    """An array's ``%C`` against what ran: the suggestion is None when none is made."""

    cap: int | None
    peak: int
    suggested: int | None
    evidence: str


@dataclass(frozen=True)
class Efficiency:
    manifest: str
    stage: str
    cpu_efficiency: float | None  # 0..1 (more when a task used more CPUs than it held)
    cpu_tasks: int  # completed tasks with the three figures
    gpu_hours: float | None
    throughput_per_hour: float | None
    failure_rate: float | None
    concurrency: Concurrency | None


def _cpu(done: Sequence[Usage]) -> tuple[float | None, int]:
    measured = [
        u
        for u in done
        if u.cpu_time_s is not None and u.alloc_cpus and u.run_time_s and u.run_time_s > 0
    ]
    held = sum((u.run_time_s or 0) * (u.alloc_cpus or 0) for u in measured)
    if not measured or held <= 0:
        return None, 0
    return round(sum(u.cpu_time_s or 0 for u in measured) / held, 3), len(measured)


def _throughput(group: Sequence[Usage]) -> float | None:
    starts = [u.started for u in group if u.started is not None]
    ends = [u.ended for u in group if u.ended is not None]
    done = sum(u.succeeded for u in group)
    if not starts or not ends or not done:
        return None
    hours = (max(ends) - min(starts)) / 3600
    return round(done / hours, 1) if hours > 0 else None


def peak(tasks: Iterable[Usage]) -> int:
    """The most tasks running at one instant (an end frees its place before a start at the
    same second takes it)."""
    events = sorted(
        (when, step)
        for u in tasks
        if u.started is not None and u.ended is not None
        for when, step in ((u.started, 1), (u.ended, -1))
    )
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def _concurrency(group: Sequence[Usage], failure_rate: float | None) -> Concurrency | None:
    arrays: dict[str, list[Usage]] = {}
    for u in group:
        if u.array_size >= MIN_ARRAY:
            arrays.setdefault(u.job, []).append(u)
    timed = [
        tasks
        for tasks in arrays.values()
        if all(u.started is not None and u.ended is not None for u in tasks)
    ]
    if not timed:
        return None  # no array, or the accounting has no start and end of each task
    widest = max(timed, key=peak)
    most, cap, size = peak(widest), widest[0].array_cap, widest[0].array_size
    if failure_rate is not None and failure_rate >= FAIL_FAST:
        why = f"{failure_rate:.0%} of tasks failed: fix them before running more at once"
        return Concurrency(cap=cap, peak=most, suggested=None, evidence=why)
    if cap is None:
        why = f"no %C: at most {most} of {size} tasks ran at once (the scheduler's share)"
        return Concurrency(cap=None, peak=most, suggested=None, evidence=why)
    if most < cap:
        why = f"at most {most} of {size} tasks ran at once, under the cap of {cap}: the queue, not %C, held them"
        return Concurrency(cap=cap, peak=most, suggested=None, evidence=why)
    raised = min(size, 2 * cap)
    if raised <= cap:
        why = f"every task ran at once ({most} of {size})"
        return Concurrency(cap=cap, peak=most, suggested=None, evidence=why)
    why = f"{most} of {size} tasks ran at once, the cap of {cap}, and none failed too often: ×2"
    return Concurrency(cap=cap, peak=most, suggested=raised, evidence=why)


def efficiency(manifest: str, stage: str, group: Sequence[Usage]) -> Efficiency:
    finished = [u for u in group if u.succeeded or u.failed]
    failures = sum(u.failed for u in finished)
    rate = round(failures / len(finished), 3) if finished else None
    done = [u for u in group if u.succeeded]
    cpu, counted = _cpu(done)
    gpus = [(u.alloc_gpus or 0) * (u.run_time_s or 0) for u in group if u.alloc_gpus]
    return Efficiency(
        manifest=manifest,
        stage=stage,
        cpu_efficiency=cpu,
        cpu_tasks=counted,
        gpu_hours=round(sum(gpus) / 3600, 3) if gpus else None,
        throughput_per_hour=_throughput(group),
        failure_rate=rate,
        concurrency=_concurrency(group, rate),
    )


def all_of(groups: Mapping[tuple[str, str], Sequence[Usage]]) -> tuple[Efficiency, ...]:
    return tuple(efficiency(m, s, g) for (m, s), g in groups.items() if g)


def share(value: float | None) -> str:
    """``0.42`` → ``42 %`` (None: ``—``)."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{100 * value:.0f} %"
