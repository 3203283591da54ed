"""The stages view: each target's latest job per stage, with its own task's outcome (state,
exit code, the runner's reason, the diagnosis), in STATUS.md and `campaign status`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from campaignops.backends import registry
from campaignops.model import ledger as ledger_mod
from campaignops.model import ledger_index
from campaignops.views.cells import NONE, cell, empty, table
from campaignops.views.recent import state

STAGES_HEADER = ("target", *ledger_mod.STAGES)


def diagnosis(task: ledger_mod.Task) -> str | None:
    """What status --refresh diagnosed for a failed task: ``oom-gpu (cuda-oom)``, ``unknown``
    when no catalog entry explained it; None for a task that did not fail."""
    if not task.finished or task.succeeded or task.state == "CANCELLED":
        return None
    if task.category is None:
        return "unknown"
    return task.category + (f" ({task.entry})" if task.entry else "")


def task_state(job: ledger_mod.Job, target: str) -> str:
    """A target's own outcome in ``job``: its array task's state (with the reason the runner
    recorded, e.g. output-missing, and the diagnosis), else what the ledger says of the
    submission."""
    task = job.task(target)
    if task is None or task.state is None:
        return state(job)
    reason = f", {task.reason}" if task.reason else ""
    code = task.exit_code
    shown = f" exit {code}" if task.finished and code not in (0, None) else ""
    found = diagnosis(task)
    diagnosed = f", {found}" if found else ""
    return f"{task.state}{shown}{reason}{diagnosed}"


def job_diagnosis(job: ledger_mod.Job) -> str | None:
    """The diagnoses of a job's failed tasks: ``oom-gpu (cuda-oom)``, or counted for an array
    (``oom-gpu (cuda-oom) ×2, unknown``)."""
    counts: dict[str, int] = {}
    for target in dict.fromkeys(job.targets):
        task = job.task(target)
        found = diagnosis(task) if task is not None else None
        if found:
            counts[found] = counts.get(found, 0) + 1
    return ", ".join(f"{d} ×{n}" if n > 1 else d for d, n in counts.items()) or None


def render(ledger: ledger_mod.Ledger, page: Callable[[str], Mapping[str, Any] | None]) -> str:
    """Each target's latest job per stage (the ledger's per-target index: the table's size
    follows the targets, not the history). ``page``: a backend's page by name (a box's note)."""
    index = ledger_index.of(ledger.jobs, ledger.index)
    rows = []
    for target in sorted(index.targets()):
        row = [cell(target)]
        for stage in ledger_mod.STAGES:
            lid = index.latest(target, stage)
            last = ledger.by_id.get(lid) if lid is not None else None
            if last is None:
                row.append(NONE)
                continue
            index_of = last.index_of(target)
            where = last.job_id if len(last.targets) == 1 else f"{last.job_id} task {index_of}"
            box = registry.cell_note(last, target, page(last.backend) if last.backend else None)
            where = f"{where} {box}" if box else where
            text = task_state(last, target)
            row.append(cell(f"{text} ({where})" if last.job_id else text))
        rows.append(row)
    return table(STAGES_HEADER, rows or empty(STAGES_HEADER, "no jobs yet"))
