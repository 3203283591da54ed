"""A job or one array task as people name it: ``4242``, ``4242_3``, PBS ``4242[3].server``, or
a ledger id. One reader for every command that takes such a reference (diagnose, lesson add).
"""

from __future__ import annotations

import re

from campaignops import ledger
from campaignops.errors import UsageError

_TASK = re.compile(r"(?P<job>.+)_(?P<index>\d{1,7})\Z")
_PBS_TASK = re.compile(r"(?P<number>\d+)\[(?P<index>\d{1,7})\](?P<server>.*)\Z")


def _named(history: ledger.Ledger, ref: str) -> list[ledger.Job]:
    if ref in history.by_id:
        return [history.by_id[ref]]
    return [j for j in history.jobs if j.job_id == ref]


def resolve(history: ledger.Ledger, ref: str) -> tuple[ledger.Job, int | None]:
    """The recorded job ``ref`` names, and the array index it names (None: the whole job).
    Unknown, ambiguous or out of range: UsageError (exit 2)."""
    ref = ref.strip()
    found, index = _named(history, ref), None
    if not found:
        task, pbs = _TASK.match(ref), _PBS_TASK.match(ref)
        if task:
            found, index = _named(history, task["job"]), int(task["index"])
        elif pbs:
            found = _named(history, f"{pbs['number']}[]{pbs['server']}")
            index = int(pbs["index"])
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
