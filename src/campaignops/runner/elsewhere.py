"""Local jobs of another clone: recorded in the ledger, running (or not) on another machine.

A job on a `local` backend runs where it was submitted, and its state lives in that checkout's
`.campaign/local/` (gitignored). Once two clones merge, clone B's ledger holds clone A's local
jobs as A last committed them (often PENDING, from `submit --commit`); B's executor has never
heard of them, answers UNKNOWN, and no refresh here can end them. So, read here, such a job is
"on another machine": `campaign status` shows it so instead of PENDING, `--watch` does not wait
for it, and no_sibling names it as a job it could not ask about, instead of saying nothing. The
ledger and STATUS.md (a committed view, the same in every clone) keep what was recorded; the
clone that ran the job records its end, and a merge brings it here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from campaignops import ledger
from campaignops.errors import CampaignError
from campaignops.runner import backends, localbox
from campaignops.runner.local import STATE_DIR
from campaignops.runner.spec import FINISHED

ELSEWHERE = "on another machine"
# Where such a job's state can be read, and how it comes here.
THERE = "campaign status --refresh in the clone that submitted it, then commit and push its ledger"


def _local(root: Path, name: str, known: dict[str, bool]) -> bool:
    if name not in known:
        try:
            known[name] = backends.module_for(backends.page(root, name)) == "local"
        except CampaignError:
            known[name] = False
    return known[name]


def _here(root: Path, job_id: str) -> bool:
    """This checkout's executor has the job: its directory under the local state root."""
    state = root / STATE_DIR
    return (
        state / localbox.BOX_DIR / job_id if localbox.is_box_id(job_id) else state / job_id
    ).is_dir()


def of(root: Path, jobs: Iterable[ledger.Job]) -> tuple[ledger.Job, ...]:
    """The unfinished jobs of ``jobs`` on a local backend that this checkout did not run."""
    known: dict[str, bool] = {}
    return tuple(
        job
        for job in jobs
        if job.job_id is not None
        and not job.error
        and job.state not in FINISHED
        and _local(root, job.backend or "local", known)
        and not _here(root, job.job_id)
    )
