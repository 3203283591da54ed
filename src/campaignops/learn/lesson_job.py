"""Which job a lesson's ``--job`` names, and the catalog entry its diagnosis gives.

Pure: a folded ledger in, a JobRef out. ``campaign status --refresh`` records each failed task's
diagnosis (``"diagnosis": {"entry", "category"}``), read here through ledger.Task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from campaignops.backends import registry
from campaignops.core.errors import UsageError
from campaignops.model import jobref, ledger
from campaignops.model.lessons import NEW


@dataclass(frozen=True)
class JobRef:
    """A job named on the command line: its label for the line, and what it was diagnosed as."""

    label: str
    ledger_id: str
    index: int | None
    entries: tuple[str, ...]  # distinct diagnosed entry ids of the task(s), in index order


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
    job, index = jobref.resolve(history, ref, readings=registry.task_refs)
    count = max(len(job.targets), 1)
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
