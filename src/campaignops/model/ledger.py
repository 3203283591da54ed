"""Reading the ledger (.campaign/ledger.jsonl): records folded into one job per ledger_id.

The records, their fold and what reading does with a damaged line are described in
campaignops.model.ledger_fold, below both this module and ledger_snapshot; the names are re-exported
here, the module the rest of the code reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from campaignops.model import ledger_index, ledger_snapshot
from campaignops.model.ledger_fold import STAGES as STAGES
from campaignops.model.ledger_fold import Folding as Folding
from campaignops.model.ledger_fold import Job as Job
from campaignops.model.ledger_fold import Ledger as Ledger
from campaignops.model.ledger_fold import Skipped as Skipped
from campaignops.model.ledger_fold import Task as Task
from campaignops.model.ledger_fold import decode as decode
from campaignops.model.ledger_fold import fold as fold
from campaignops.model.ledger_fold import parse as parse
from campaignops.model.ledger_fold import parse_time as parse_time


def read(root: Path) -> Ledger:
    """The campaign's ledger, at any size; a missing ledger is an empty one (nothing was
    submitted yet). Read once per process while the file is unchanged, and through a snapshot
    of its folded prefix (campaignops.model.ledger_snapshot), so only new lines are parsed."""
    return ledger_snapshot.read(root)


def latest_attempts(jobs: Iterable[Job], stage: str) -> dict[str, Task]:
    """Each target's own outcome in its latest job at ``stage`` (jobs in submission order)."""
    latest: dict[str, Task] = {}
    for job in sorted(jobs, key=Job.sort_key):
        if job.stage != stage:
            continue
        for target in job.targets:
            task = job.task(target)
            if task is not None:
                latest[target] = task
    return latest


def live(ledger: Ledger) -> tuple[Job, ...]:
    """The jobs that may still change state (Job.open), in submission order, from the
    ledger's index: what a refresh asks about, and all another clone may hold; the cost
    follows them, not the history."""
    ids = ledger_index.of(ledger.jobs, ledger.index).live
    return tuple(sorted((ledger.by_id[i] for i in ids), key=Job.sort_key))


def placed(ledger: Ledger) -> tuple[Job, ...]:
    """The jobs placed on ssh boxes (a ``placement`` recorded), in submission order, from the
    ledger's index: what the instance meter reads."""
    ids = ledger_index.of(ledger.jobs, ledger.index).placed
    return tuple(sorted((ledger.by_id[i] for i in ids), key=Job.sort_key))


def latest_jobs(ledger: Ledger) -> tuple[Job, ...]:
    """Each target's latest job at each stage that the scheduler did not refuse, in submission
    order (what an OUT_OF_MEMORY retry looks at), from the ledger's index. A target id two
    manifests share counts as one: its latest job, whichever manifest it came from."""
    index = ledger_index.of(ledger.jobs, ledger.index)
    by_id = ledger.by_id

    def submitted(lid: str) -> bool:
        return not by_id[lid].error

    def order(lid: str) -> Any:
        return by_id[lid].sort_key()

    found = {
        lid
        for target in index.targets()
        for stage in STAGES
        if (lid := index.latest(target, stage, submitted, order)) is not None
    }
    return tuple(sorted((by_id[i] for i in found), key=Job.sort_key))
