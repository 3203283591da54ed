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

from campaignops.backends import registry as backends
from campaignops.backends.base import Kind
from campaignops.model import ledger
from campaignops.model.states import FINISHED

ELSEWHERE = "on another machine"
# Where such a job's state can be read, and how it comes here.
THERE = "campaign status --refresh in the clone that submitted it, then commit and push its ledger"


def _kind(root: Path, name: str, known: dict[str, Kind | None]) -> Kind | None:
    if name not in known:
        known[name] = backends.kind_named(root, name)
    return known[name]


def _away(root: Path, job: ledger.Job, known: dict[str, Kind | None]) -> bool:
    """A job of a backend whose jobs only their machine sees (Kind.ran_here), not run here."""
    kind = _kind(root, job.backend or "local", known)
    ran_here = kind.ran_here if kind is not None else None
    return ran_here is not None and job.job_id is not None and not ran_here(root, job.job_id)


def of(root: Path, jobs: Iterable[ledger.Job]) -> tuple[ledger.Job, ...]:
    """The unfinished jobs of ``jobs`` on a local backend that this checkout did not run."""
    known: dict[str, Kind | None] = {}
    return tuple(
        job
        for job in jobs
        if job.job_id is not None
        and not job.error
        and job.state not in FINISHED
        and _away(root, job, known)
    )
