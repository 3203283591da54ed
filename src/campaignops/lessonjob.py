"""Which job a lesson's ``--job`` names, and the catalog entry its diagnosis gives.

Pure: a folded ledger in, a JobRef out. ``campaign status --refresh`` records each failed task's
diagnosis (``"diagnosis": {"entry", "category"}``), read here through ledger.Task.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from campaignops import ledger
from campaignops.errors import UsageError
from campaignops.lessons import NEW

_TASK = re.compile(r"(?P<job>.+)_(?P<index>\d+)\Z")
_PBS_TASK = re.compile(r"(?P<number>\d+)\[(?P<index>\d+)\](?P<server>.*)\Z")


@dataclass(frozen=True)
class JobRef:
    """A job named on the command line: its label for the line, and what it was diagnosed as."""

    label: str
    ledger_id: str
    index: int | None
    entries: tuple[str, ...]  # distinct diagnosed entry ids of the task(s), in index order


def _named(history: ledger.Ledger, ref: str) -> list[ledger.Job]:
    if ref in history.by_id:
        return [history.by_id[ref]]
    return [j for j in history.jobs if j.job_id == ref]


def _one(found: list[ledger.Job], ref: str) -> ledger.Job:
    if len(found) > 1:
        ids = ", ".join(f"{j.ledger_id} ({j.backend})" for j in found)
        raise UsageError(
            message=f"job id {ref!r} is recorded {len(found)} times: {ids}",
            hint="pass the ledger id of the one you mean (campaign status --format json)",
        )
    return found[0]


def _diagnosed(job: ledger.Job, indices: Iterable[int]) -> tuple[str, ...]:
    entries: list[str] = []
    for i in indices:
        task = job.task(job.targets[i]) if job.targets else ledger.Task.of(i, job.record)
        if task is not None and task.entry is not None:
            entries.append(task.entry)
    return tuple(dict.fromkeys(entries))


def find_job(history: ledger.Ledger, ref: str) -> JobRef:
    """``ref`` as a ledger id, a backend job id, or one task of it (``<job>_<index>``, PBS
    ``<n>[<index>].<server>``). Unknown or ambiguous: UsageError (exit 2)."""
    ref = ref.strip()
    found, index = _named(history, ref), None
    if not found:
        task = _TASK.match(ref)
        pbs = _PBS_TASK.match(ref)
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
    job = _one(found, ref)
    count = max(len(job.targets), 1)
    if index is not None and index >= count:
        raise UsageError(
            message=f"job {job.job_id or job.ledger_id} has {count} task(s); no task {index}",
            hint=f"array indices run from 0 to {count - 1}",
        )
    label = (job.job_id or ref) if ref == job.ledger_id else ref
    indices = range(count) if index is None else (index,)
    return JobRef(label, job.ledger_id, index, _diagnosed(job, indices))


def entry_of(ref: JobRef) -> str:
    """The catalog entry the job's diagnosis names, ``new`` when none was diagnosed; several
    different diagnoses (an array's tasks) are ambiguous: UsageError naming them."""
    if not ref.entries:
        return NEW
    if len(ref.entries) > 1:
        raise UsageError(
            message=f"the tasks of job {ref.label} were diagnosed as "
            f"{', '.join(ref.entries)}: which one is this lesson about?",
            hint=f"name one task ({ref.label}_INDEX) or pass --entry ID",
        )
    return ref.entries[0]
