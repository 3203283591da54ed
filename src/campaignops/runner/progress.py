"""What `campaign status --watch` shows on a terminal: one live line per stage of the jobs it
watches, counting their tasks done / running / pending / failed, and the time watched.

Pure: the CLI reads the ledger after each round, asks for the lines, and rewrites them in place
on a terminal (cli/live.py); where stderr is not a terminal it prints none of them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from campaignops.model import ledger
from campaignops.model.states import FINISHED
from campaignops.views.render import duration

ORDER = {stage: n for n, stage in enumerate(ledger.STAGES)}


@dataclass(frozen=True)
class StageProgress:
    stage: str
    done: int = 0
    running: int = 0
    pending: int = 0
    failed: int = 0


def _slot(task: ledger.Task | None, job: ledger.Job) -> str:
    if task is not None and task.state is not None:
        if task.state in FINISHED:
            return "done" if task.succeeded else "failed"
        return "running" if task.state == "RUNNING" else "pending"
    if job.error:
        return "failed"  # refused by the scheduler: nothing of it will run
    return "running" if job.state == "RUNNING" else "pending"


def of(jobs: Iterable[ledger.Job], watched: Collection[str]) -> tuple[StageProgress, ...]:
    """Per stage, the tasks of the jobs whose ledger ids are in ``watched``."""
    counts: dict[str, dict[str, int]] = {}
    for job in jobs:
        if job.ledger_id not in watched:
            continue
        slots = counts.setdefault(job.stage or "?", {})
        for target in job.targets or ("",):
            slot = _slot(job.task(target) if target else None, job)
            slots[slot] = slots.get(slot, 0) + 1
    return tuple(
        StageProgress(stage, **slots)
        for stage, slots in sorted(counts.items(), key=lambda kv: (ORDER.get(kv[0], 9), kv[0]))
    )


def lines(stages: Iterable[StageProgress], elapsed_s: float) -> list[str]:
    """``smoke       3 done · 1 running · 0 pending · 1 failed · 1m 05s``, one per stage."""
    shown = list(stages)
    width = max((len(s.stage) for s in shown), default=0)
    return [
        f"{s.stage:<{width}}  {s.done} done · {s.running} running · {s.pending} pending · "
        f"{s.failed} failed · {duration(elapsed_s)}"
        for s in shown
    ]
