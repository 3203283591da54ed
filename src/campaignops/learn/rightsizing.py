"""Right-sizing: what finished tasks used against what their manifest asks, and what to ask.

Pure: jobs come from campaignops.model.ledger, each group's current request from the caller
(campaignops.learn.resources resolves it from the manifest as the runner does). A group is one
manifest (one phase of it) at one stage. The rules, their factors and their sources are in
docs/runner.md ("Right-sizing") and docs/decisions.md ("(rightsizing) ...").

- Memory: a group that ran out of memory is raised to RAISE × the request the task had; else,
  with at least MIN_TASKS completed tasks with a MaxRSS, a peak under MEM_USED_BELOW of the
  request is cut to HEADROOM × the peak, rounded up to a clean size (never below a raise).
- Time: a group that hit its limit is raised to RAISE × the longest timed-out run; else, with at
  least MIN_TASKS completed runs, a longest run under TIME_USED_BELOW of the limit is cut to
  HEADROOM × that run, rounded up to a clean limit, never below TIME_FLOOR_S.

Sizes in Slurm's forms are read leniently (``4194304K``, ``1.5G``, ``16Gn``, ``2Gc``, PBS's
``123kb``); anything else is ignored, never an error.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from campaignops.core.units import KIB, show_size
from campaignops.learn.efficiency import Efficiency, finished_tasks
from campaignops.model import walltime
from campaignops.model.ledger import Job, Task, parse_time
from campaignops.model.states import STATE_CATEGORIES

MIN_TASKS = 3
FITS = "the request fits"  # how a kept request that needs no change ends its evidence
HEADROOM = 1.5
RAISE = 1.5
MEM_USED_BELOW = 0.70  # Princeton jobstats MIN_MEMORY_USAGE
TIME_USED_BELOW = 0.60  # Princeton jobstats TIME_EFFICIENCY_BLACK
TIME_FLOOR_S = 600


_SIZE = re.compile(r"([0-9]{1,15}(?:\.[0-9]{1,9})?)([KMGTP]?)(I?B)?([NC]?)")


def size_kib(text: object, *, bare: str = "K", cpus: int | None = None) -> float | None:
    """A memory size in KiB (binary units, as Slurm and PBS mean them), else None.

    ``bare`` is the unit of a number without one: ``K`` for MaxRSS (sacct's reading), ``M`` for
    a request (``--mem=4000`` is megabytes). An older ReqMem's ``n`` (per node) is dropped; its
    ``c`` (per CPU) is multiplied by ``cpus`` (1 when unknown). Zero is no measurement: None.
    """
    if not isinstance(text, str):
        return None
    match = _SIZE.fullmatch(text.strip().upper())
    if match is None:
        return None
    number, unit, byte, per = match.groups()
    # "512B" is bytes; a number alone is in the ``bare`` unit.
    scale = KIB[unit] if unit else (1 / 1024 if byte else KIB[bare.upper()])
    value = float(number) * scale
    if per == "C":
        value *= cpus if cpus and cpus > 0 else 1
    return value if value > 0 and math.isfinite(value) else None


def clean_size(kib: float) -> tuple[float, str]:
    """``kib`` rounded up to a size worth writing in a manifest: 128M steps up to 1G, whole
    gigabytes to 30G, then steps of 5G to 100G, 10G to 1000G, 100G beyond."""
    mib = kib / 1024
    if mib <= 1024:
        steps = max(1, math.ceil(mib / 128))
        return steps * 128 * 1024.0, ("1G" if steps == 8 else f"{steps * 128}M")
    gib = mib / 1024
    step = 1 if gib <= 30 else 5 if gib <= 100 else 10 if gib <= 1000 else 100
    whole = math.ceil(gib / step) * step
    return whole * KIB["G"], f"{whole}G"


def clean_time(seconds: float) -> int:
    """``seconds`` rounded up to a limit worth writing: 10-minute steps to an hour, half hours
    to six hours, whole hours beyond; never below TIME_FLOOR_S nor above walltime's maximum."""
    s = max(seconds, TIME_FLOOR_S)
    step = 600 if s <= 3600 else 1800 if s <= 6 * 3600 else 3600
    return min(math.ceil(s / step) * step, walltime.MAX_SECONDS)


def show_time(seconds: int) -> str:
    return walltime.dhms(seconds)


@dataclass(frozen=True)
class Request:
    """What a group's manifest asks for now (``resources`` as the runner resolves them)."""

    mem: str | None = None
    time: str | None = None
    cpus: int | None = None


@dataclass(frozen=True)
class Sample:
    """One finished task: its final state, failure category, times and memory."""

    state: str
    failure: str | None  # the category it counts under; None: it succeeded
    queue_wait_s: float | None = None
    run_time_s: float | None = None
    max_rss: str | None = None
    req_mem: str | None = None


def queue_wait(job: Job, task: Task) -> float | None:
    """Seconds ``task`` waited: its start less the job's submission (an array's later tasks
    waited longer), else the job's own queue wait."""
    submitted, started = parse_time(job.text("submitted")), parse_time(task.started)
    if started is not None and submitted is not None and started >= submitted:
        return (started - submitted).total_seconds()
    return job.queue_wait()


def samples(job: Job) -> list[Sample]:
    """Every finished task of ``job``, each target once (a repeated target is one task), and
    before it each attempt its box executor ran again (``Task.tries``: an attempt like a
    scheduler retry's job).

    Queue wait is the task's start less the job's submission (an array's later tasks waited
    longer), else the job's own queue wait; a task's first attempt alone waited in a queue.
    """
    out: list[Sample] = []
    for last, _ in finished_tasks(job):
        for n, task in enumerate((*last.tries, last)):
            if task.state is None:
                continue
            failure = None
            if not task.succeeded:
                # A failed task whose log matched no catalog entry counts under the category
                # its scheduler verdict names; any other final state under its own name.
                failure = task.category or STATE_CATEGORIES.get(task.state, task.state)
            out.append(
                Sample(
                    state=task.state,
                    failure=failure,
                    queue_wait_s=queue_wait(job, task) if n == 0 else None,
                    run_time_s=task.run_time_s,
                    max_rss=task.max_rss,
                    req_mem=task.req_mem,
                )
            )
    return out


@dataclass(frozen=True)
class Spread:
    """Median and maximum of some tasks' seconds, and how many tasks had a figure."""

    median: float | None
    max: float | None
    count: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        known = [v for v in values if v is not None]
        if not known:
            return cls(median=None, max=None, count=0)
        return cls(
            median=round(statistics.median(known), 1), max=round(max(known), 1), count=len(known)
        )


@dataclass(frozen=True)
class Recommendation:
    """One resource of one group: the request now, the one to write (None: no change is
    recommended, ``evidence`` says why), and the figures behind it."""

    manifest: str
    stage: str
    resource: str  # "mem" or "time"
    current: str | None
    recommended: str | None
    evidence: str


@dataclass(frozen=True)
class StageReport:
    """One group's figures: what its finished tasks waited, ran, used and why they failed."""

    manifest: str
    stage: str
    tasks: int
    queue_wait: Spread
    run_time: Spread  # completed tasks only: a crash after a second says nothing of a run
    failures: Mapping[str, int]
    peak_kib: float | None  # the largest MaxRSS of a completed task
    mem_request: str | None  # the manifest's mem, else the largest recorded ReqMem
    time_limit: str | None  # the manifest's time, as written


@dataclass(frozen=True)
class Audit:
    recommendations: tuple[Recommendation, ...] = ()
    stages: tuple[StageReport, ...] = field(default_factory=tuple)
    efficiency: tuple[Efficiency, ...] = ()  # learn/efficiency.py's, per group


def _share(part: float, whole: float) -> str:
    share = 100 * part / whole
    return "<1 %" if 0 < share < 1 else f"{share:.0f} %"


_HEADROOM = f"+{100 * (HEADROOM - 1):.0f} % headroom"


def _fits(r: Recommendation) -> bool:
    return r.recommended is None and r.evidence.endswith(FITS)


def _tasks(n: int) -> str:
    return f"{n} task" + ("" if n == 1 else "s")


def _memory(
    manifest: str, stage: str, group: Sequence[Sample], ask: Request
) -> tuple[Recommendation | None, float | None, str | None]:
    """The group's memory recommendation, its completed peak and the request it is held to."""
    cpus = ask.cpus
    recorded = [(s.req_mem, size_kib(s.req_mem, bare="M", cpus=cpus)) for s in group]
    largest = max((r for r in recorded if r[1] is not None), key=lambda r: r[1] or 0, default=None)
    current_kib = size_kib(ask.mem, bare="M")
    current = ask.mem
    if current_kib is None and largest is not None:
        current, current_kib = largest
    done = [k for s in group if s.failure is None for k in [size_kib(s.max_rss)] if k is not None]
    peak = max(done, default=None)

    def rec(recommended: str | None, evidence: str) -> Recommendation:
        return Recommendation(
            manifest=manifest,
            stage=stage,
            resource="mem",
            current=current,
            recommended=recommended,
            evidence=evidence,
        )

    ooms = [s for s in group if s.failure == "oom-host" or s.state == "OUT_OF_MEMORY"]
    floor_kib, floor_text = 0.0, ""
    if ooms:
        had = [size_kib(s.req_mem, bare="M", cpus=cpus) or current_kib for s in ooms]
        known = [h for h in had if h is not None]
        if known:
            floor_kib, floor_text = clean_size(RAISE * max(known))
            if current_kib is None or floor_kib > current_kib:
                evidence = (
                    f"{_tasks(len(ooms))} ran out of memory at {show_size(max(known))}: "
                    f"×{RAISE:g} the request"
                )
                return rec(floor_text, evidence), peak, current
    if len(done) < MIN_TASKS:
        return (
            rec(
                None,
                f"{_tasks(len(done))} completed with a MaxRSS: too few to recommend "
                f"(needs {MIN_TASKS})",
            ),
            peak,
            current,
        )
    if peak is None or current_kib is None:
        return None, peak, current
    used = (
        f"max RSS {show_size(peak)} over {_tasks(len(done))} "
        f"({_share(peak, current_kib)} of {show_size(current_kib)})"
    )
    if peak >= MEM_USED_BELOW * current_kib:
        return rec(None, f"{used}: {FITS}"), peak, current
    target_kib, target = clean_size(HEADROOM * peak)
    floored = floor_kib > target_kib
    if floored:
        target_kib, target = floor_kib, floor_text
    if target_kib >= current_kib:
        return rec(None, f"{used}; with {_HEADROOM}, no smaller request: {FITS}"), peak, current
    evidence = f"{used}, {_HEADROOM}"
    if floored:
        evidence += f", not below ×{RAISE:g} a request that ran out of memory"
    return rec(target, evidence), peak, current


def _time(
    manifest: str, stage: str, group: Sequence[Sample], ask: Request
) -> Recommendation | None:
    try:
        limit = None if ask.time is None else walltime.parse(ask.time)
    except walltime.WalltimeError:
        limit = None

    def rec(recommended: str | None, evidence: str) -> Recommendation:
        return Recommendation(
            manifest=manifest,
            stage=stage,
            resource="time",
            current=ask.time,
            recommended=recommended,
            evidence=evidence,
        )

    outs = [s for s in group if s.failure == "timeout" or s.state == "TIMEOUT"]
    floor = 0
    if outs:
        ran = [s.run_time_s for s in outs if s.run_time_s is not None]
        longest = max(ran) if ran else limit
        if longest is not None:
            floor = clean_time(RAISE * longest)
            if limit is None or floor > limit:
                evidence = (
                    f"{_tasks(len(outs))} hit the time limit after "
                    f"{show_time(round(longest))}: ×{RAISE:g} the longest"
                )
                return rec(show_time(floor), evidence)
    runs = [s.run_time_s for s in group if s.failure is None and s.run_time_s is not None]
    if limit is None:
        return None  # the partition's default applies: nothing to compare against
    if len(runs) < MIN_TASKS:
        return rec(
            None,
            f"{_tasks(len(runs))} completed with a run time: too few to recommend "
            f"(needs {MIN_TASKS})",
        )
    longest_run = max(runs)
    used = (
        f"longest run {show_time(round(longest_run))} over {_tasks(len(runs))} "
        f"({_share(longest_run, limit)} of {show_time(limit)})"
    )
    if longest_run >= TIME_USED_BELOW * limit:
        return rec(None, f"{used}: {FITS}")
    target = max(clean_time(HEADROOM * longest_run), floor)
    if target >= limit:
        least = f" and the {show_time(TIME_FLOOR_S)} floor" if target == TIME_FLOOR_S else ""
        return rec(None, f"{used}; with {_HEADROOM}{least}, no shorter limit: {FITS}")
    evidence = f"{used}, {_HEADROOM}"
    if target > clean_time(HEADROOM * longest_run):
        evidence += f", not below ×{RAISE:g} a run that hit the limit"
    elif target == TIME_FLOOR_S and HEADROOM * longest_run < TIME_FLOOR_S:
        evidence += f", floor {show_time(TIME_FLOOR_S)}"
    return rec(show_time(target), evidence)


GroupKey = tuple[str, str]  # (manifest, stage)


def audit(
    groups: Mapping[GroupKey, Sequence[Sample]], requests: Mapping[GroupKey, Request]
) -> Audit:
    """Each group's figures and recommendations, groups in manifest then stage order."""
    stages: list[StageReport] = []
    recs: list[Recommendation] = []
    for key in sorted(groups, key=lambda k: (k[0], _STAGE_ORDER.get(k[1], 9), k[1])):
        manifest, stage = key
        group = groups[key]
        ask = requests.get(key, Request())
        mem, peak, mem_request = _memory(manifest, stage, group, ask)
        time = _time(manifest, stage, group, ask)
        # A request that fits shows as kept only beside a row of the same group (a change, or
        # too few tasks to judge): a group whose requests all fit shows none.
        rows = [r for r in (mem, time) if r is not None]
        recs.extend(() if all(_fits(r) for r in rows) else rows)
        failures: dict[str, int] = {}
        for s in group:
            if s.failure is not None:
                failures[s.failure] = failures.get(s.failure, 0) + 1
        stages.append(
            StageReport(
                manifest=manifest,
                stage=stage,
                tasks=len(group),
                queue_wait=Spread.of(s.queue_wait_s for s in group),
                run_time=Spread.of(s.run_time_s for s in group if s.failure is None),
                failures=MappingProxyType(dict(sorted(failures.items()))),
                peak_kib=peak,
                mem_request=mem_request,
                time_limit=ask.time,
            )
        )
    return Audit(recommendations=tuple(recs), stages=tuple(stages))


_STAGE_ORDER = {"smoke": 0, "single": 1, "production": 2}
