"""Reading the ledger (.campaign/ledger.jsonl): records folded into one job per ledger_id.

The records, their fold and what reading does with a damaged line are described in
campaignops.model.ledger_fold, below both this module and ledger_snapshot; the names are re-exported
here, the module the rest of the code reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from campaignops.model import ledger_snapshot
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
