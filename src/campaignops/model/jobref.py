"""A job or one array task as people name it: ``4242``, ``4242_3`` (the campaign's JOB_INDEX form),
a task in its scheduler's own syntax (``readings``: backends.registry.task_refs, e.g. PBS
``4242[3].server``), or a ledger id. One reader for every command that takes such a reference
(diagnose, lesson add, cancel).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from campaignops.core.errors import UsageError
from campaignops.model import ledger

_TASK = re.compile(r"(?P<job>.+)_(?P<index>\d{1,7})\Z")


def job_of(ref: str) -> str:
    """The job a task reference of the campaign's JOB_INDEX form names (``4242_3`` → ``4242``);
    any other id as it is. Every backend whose ``task_id`` writes that form reads its task ids
    back so (backends.base.Kind.job_of's default)."""
    task = _TASK.match(ref)
    return task["job"] if task else ref


def _named(history: ledger.Ledger, ref: str) -> list[ledger.Job]:
    if ref in history.by_id:
        return [history.by_id[ref]]
    return [j for j in history.jobs if j.job_id == ref]


def _no_readings(ref: str) -> Sequence[tuple[str, int]]:
    return ()


def resolve(
    history: ledger.Ledger,
    ref: str,
    *,
    readings: Callable[[str], Sequence[tuple[str, int]]] = _no_readings,
) -> tuple[ledger.Job, int | None]:
    """The recorded job ``ref`` names, and the array index it names (None: the whole job).
    Unknown, ambiguous or out of range: UsageError (exit 2)."""
    ref = ref.strip()
    found, index = _named(history, ref), None
    if not found:
        task = _TASK.match(ref)
        candidates = [(task["job"], int(task["index"]))] if task else []
        for job_id, at in [*candidates, *readings(ref)]:
            found, index = _named(history, job_id), at
            if found:
                break
    if not found:
        raise UsageError(
            message=f"no job {ref!r} in the ledger (.campaign/ledger.jsonl)",
            hint="campaign status lists the recorded jobs: pass a job id, JOB_INDEX for one "
            "array task, or a ledger id",
        )
    if len(found) > 1:
        ids = ", ".join(f"{j.ledger_id} ({j.backend})" for j in found)
        raise UsageError(
            message=f"job id {ref!r} is recorded {len(found)} times: {ids}",
            hint="pass the ledger id of the one you mean (campaign status --format json)",
        )
    job = found[0]
    count = max(len(job.targets), 1)
    if index is not None and index >= count:
        raise UsageError(
            message=f"job {job.job_id or job.ledger_id} has {count} task(s); no task {index}",
            hint=f"array indices run from 0 to {count - 1}",
        )
    return job, index


def of_target(
    history: ledger.Ledger, target: str, stage: str | None = None
) -> tuple[ledger.Job, int | None]:
    """The last job that ran ``target`` (at ``stage`` when given) and the array index of its task
    (None: a job of one task). A guide or a script names a target, never a job id it cannot know
    in advance. None ran: UsageError (exit 2)."""
    ran = [
        j
        for j in history.jobs
        if j.job_id is not None and target in j.targets and stage in (None, j.stage)
    ]
    if not ran:
        at = f" at stage {stage}" if stage else ""
        raise UsageError(
            message=f"no submitted job in the ledger ran target {target!r}{at}",
            hint="campaign status shows each target's outcome per stage; pass a job id "
            "(JOB_INDEX for one array task) or a target that ran",
        )
    job = ran[-1]
    return job, (job.targets.index(target) if len(job.targets) > 1 else None)
