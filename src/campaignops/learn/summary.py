"""campaign report: the experiment-queue's summary of a campaign, from its ledger alone.

Per manifest (one phase of it) and stage: each target's outcome at its latest attempt
(completed; OOM-retried then completed; failed, with its diagnosis; stuck, when a person is
needed; cancelled; still running), when the group was submitted, started and finished, its
wall-clock, queue wait and run time, and what it cost. Every attempt is kept too, for the
picture (campaignops.learn.summary_svg).

The rules are the runner's own, reused: the breaker's (runner/breaker.py ``tripped_run``), the
manifest's ``oom_retry`` (runner/retry.py), the diagnosis status --refresh recorded
(learn/diagnosis, shown as views/render.py ``diagnosis``), the costs of backends/spending.py.
A target is *stuck* (docs/decisions.md, "(report) ..."): the breaker would refuse it again, its
``oom_retry`` attempts are spent, or nothing explains its failure (the seed's ``failed_other``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from campaignops.backends import spending
from campaignops.core.files import FileReader
from campaignops.learn import resources, rightsizing
from campaignops.learn.rightsizing import Spread
from campaignops.model import ledger
from campaignops.model.ledger import Job, Task, parse_time
from campaignops.runner import gates, retry
from campaignops.views.render import diagnosis

SCHEMA = "campaignops/report/v1"
OUTCOMES = ("completed", "oom-retried", "failed", "stuck", "cancelled", "running")
STAGE_ORDER = {stage: n for n, stage in enumerate(ledger.STAGES)}


@dataclass(frozen=True)
class Attempt:
    """One target's task in one job: what it did and when."""

    target: str
    attempt: int  # its place in the target's attempts at the stage, from 1
    job: str  # the job id (an array's task: ``id_index``), else the ledger id
    state: str | None
    exit_code: int | None
    diagnosis: str | None  # oom-gpu (cuda-oom), unknown; None: it did not fail
    submitted: dt.datetime | None
    started: dt.datetime | None
    ended: dt.datetime | None
    queue_wait_s: float | None
    run_time_s: float | None
    cost: float | None  # used, in the group's unit (None: not charged)

    @property
    def failed(self) -> bool:
        return self.diagnosis is not None


@dataclass(frozen=True)
class Outcome:
    """A target's outcome at its latest attempt, and why a person is needed (stuck)."""

    target: str
    outcome: str  # one of OUTCOMES
    attempts: int
    last: Attempt
    stuck: str | None = None


@dataclass(frozen=True)
class Cost:
    unit: str
    used: float
    reserved: float


@dataclass(frozen=True)
class Group:
    """One manifest (one phase of it) at one stage."""

    manifest: str
    phase: str | None
    stage: str
    targets: tuple[Outcome, ...]
    attempts: tuple[Attempt, ...]
    costs: tuple[Cost, ...]

    @property
    def label(self) -> str:
        return resources.label(self.manifest, self.phase)

    def count(self, outcome: str) -> int:
        return sum(t.outcome == outcome for t in self.targets)

    @property
    def submitted(self) -> dt.datetime | None:
        return min((a.submitted for a in self.attempts if a.submitted), default=None)

    @property
    def started(self) -> dt.datetime | None:
        return min((a.started for a in self.attempts if a.started), default=None)

    @property
    def finished(self) -> dt.datetime | None:
        """The last end, once no target is still running (None until then)."""
        if any(t.outcome == "running" for t in self.targets):
            return None
        return max((a.ended for a in self.attempts if a.ended), default=None)

    @property
    def wall_clock_s(self) -> float | None:
        """From the first submission to the last end: queue, runs and retries."""
        first, last = self.submitted, self.finished
        return (last - first).total_seconds() if first and last and last >= first else None

    @property
    def queue_wait(self) -> Spread:
        return Spread.of(a.queue_wait_s for a in self.attempts)

    @property
    def run_time(self) -> Spread:
        return Spread.of(a.run_time_s for a in self.attempts)


@dataclass(frozen=True)
class Summary:
    groups: tuple[Group, ...] = ()

    def count(self, outcome: str) -> int:
        return sum(g.count(outcome) for g in self.groups)


def _attempt(
    job: Job, target: str, n: int, task: Task, *, cost: float | None, first: bool
) -> Attempt:
    """``task`` as one attempt: the job's task, or an attempt its box executor ran again
    (``first``: the job's first attempt, the only one that waited in a queue)."""
    started, ended = parse_time(task.started), parse_time(task.ended)
    run = task.run_time_s
    if run is None and started is not None and ended is not None and ended >= started:
        run = (ended - started).total_seconds()
    index = job.index_of(target)
    name = job.job_id or job.ledger_id
    return Attempt(
        target=target,
        attempt=n,
        job=f"{name}_{index}" if len(job.targets) > 1 and job.job_id else name,
        state=task.state,
        exit_code=task.exit_code,
        diagnosis=diagnosis(task),
        submitted=parse_time(job.text("submitted")) or parse_time(job.first_time),
        started=started,
        ended=ended,
        queue_wait_s=rightsizing.queue_wait(job, task) if started and first else None,
        run_time_s=run if task.finished else None,
        cost=cost,
    )


def _stuck(
    job: Job,
    task: Task,
    target: str,
    runs: Mapping[str, Sequence[Job]],
    policy: retry.Policy | None,
) -> str | None:
    """Why a failed target needs a person, or None (a retry or a fix may still do)."""
    tripped = gates.tripped_run(target, runs.get(target, ()), job.target_fingerprint(target))
    if tripped is not None:
        return f"breaker: {tripped[0]}, {gates.BREAKER_RUN} times in a row"
    spent = policy is not None and retry.attempts_made(job, task) >= policy.max_attempts
    why = retry.why_retried(task)  # what oom_retry retries: a host or GPU OOM, a preemption
    if why is not None and policy is not None and spent:
        ended = "were preempted" if why == retry.PREEMPTION else "ran out of memory"
        return f"oom_retry: all {policy.max_attempts} attempts {ended}"
    if task.category is None:
        return "failed_other: no catalog entry explains the failure (campaign diagnose)"
    return None


# One attempt of a target: its job, its task there (a job's task, or one of the attempts the
# job's box executor ran again: Task.tries), and what the report says of it.
Link = tuple[Job, Task, Attempt]


def _outcome(
    chain: Sequence[Link],
    runs: Mapping[str, Sequence[Job]],
    policy: retry.Policy | None,
) -> Outcome:
    job, task, last = chain[-1]
    base = Outcome(target=last.target, outcome="running", attempts=len(chain), last=last)
    if not task.finished:
        return base
    if task.succeeded:
        oom = any(_oom(t) for _, t, _ in chain[:-1])
        return replace(base, outcome="oom-retried" if oom else "completed")
    if task.state == "CANCELLED":
        return replace(base, outcome="cancelled")
    why = _stuck(job, task, last.target, runs, policy)
    return replace(base, outcome="failed" if why is None else "stuck", stuck=why)


def _oom(task: Task) -> bool:
    """Whether the task ran out of memory, by the retry rule's own reading."""
    return retry.why_retried(task) in (retry.HOST_OOM, retry.GPU_OOM)


GroupKey = tuple[str, str | None, str]  # manifest, phase, stage


def summarize(
    jobs: Iterable[Job],
    *,
    everything: Sequence[Job],
    phase_of: Callable[[str, str], str | None],
    policy_of: Callable[[str], retry.Policy | None],
) -> Summary:
    """The summary of ``jobs`` (those of a manifest and a stage, or all); ``everything`` is the
    whole ledger in submission order (the breaker counts a target's attempts at any stage)."""
    # Each target's jobs at any stage, in submission order: the breaker's count, read once.
    runs: dict[str, list[Job]] = {}
    for job in everything:
        for target in dict.fromkeys(job.targets):
            runs.setdefault(target, []).append(job)
    chains: dict[GroupKey, dict[str, list[Link]]] = {}
    costs: dict[GroupKey, dict[str, list[float]]] = {}
    for job in sorted(jobs, key=Job.sort_key):
        where, stage = job.text("manifest"), job.stage
        if not where or not stage or (job.error and not job.job_id):
            continue  # a refused submission ran nothing
        charged = spending.task_costs(job)
        for target in dict.fromkeys(job.targets):
            key = (where, phase_of(where, target), stage)
            chain = chains.setdefault(key, {}).setdefault(target, [])
            used = None
            if charged is not None and (index := job.index_of(target)) is not None:
                used, held = charged[1][index]
                unit = costs.setdefault(key, {}).setdefault(charged[0], [0.0, 0.0])
                unit[0], unit[1] = unit[0] + used, unit[1] + held
            task = job.task(target) or Task(index=0, state=job.state)
            # The attempts its box executor ran again come first (their cost is the job's).
            for n, one in enumerate((*task.tries, task)):
                cost = used if one is task else None
                made = _attempt(job, target, len(chain) + 1, one, cost=cost, first=n == 0)
                chain.append((job, one, made))
    groups = [
        Group(
            manifest=key[0],
            phase=key[1],
            stage=key[2],
            targets=tuple(_outcome(chain, runs, policy_of(key[0])) for chain in by_target.values()),
            attempts=tuple(a for chain in by_target.values() for _, _, a in chain),
            costs=tuple(Cost(u, c[0], c[1]) for u, c in sorted(costs.get(key, {}).items())),
        )
        for key, by_target in chains.items()
    ]
    groups.sort(key=lambda g: (g.manifest, g.phase or "", STAGE_ORDER.get(g.stage, 9), g.stage))
    return Summary(groups=tuple(groups))


def report(*, root: Path, stage: str | None = None, manifest_path: str | None = None) -> Summary:
    """The summary of the campaign at ``root``, optionally one stage or one manifest.

    UsageError when ``manifest_path`` is neither a file of the campaign nor named by a job.
    """
    reader = FileReader(root)
    everything = ledger.read(root).jobs
    jobs = resources.select(everything, reader, stage=stage, manifest_path=manifest_path)
    docs: dict[str, Mapping[str, Any] | None] = {}

    def doc(path: str) -> Mapping[str, Any] | None:
        if path not in docs:
            docs[path] = resources.manifest_doc(reader, path)
        return docs[path]

    phases: dict[str, dict[str, str]] = {}

    def phase_of(path: str, target: str) -> str | None:
        if path not in phases:
            phases[path] = resources.phases_of(doc(path) or {})
        return phases[path].get(target)

    return summarize(
        jobs,
        everything=sorted(everything, key=Job.sort_key),
        phase_of=phase_of,
        policy_of=lambda path: retry.policy_of(doc(path)),
    )
