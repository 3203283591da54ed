"""How long `campaign status --watch` waits between rounds.

A round that queries a scheduler (squeue/sacct, qstat) or a box over ssh is kept at least
``--interval`` apart (60 s or more): that is what cluster admins ask. A round that only reads the
local executor's files on this machine costs nothing and hammers nobody, so while every job
still open ran on a `local` backend the watch looks again after ``LOCAL_PAUSE_S``: the example's
smoke, done in seconds, is not watched for a minute.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from campaignops.backends import registry as backends
from campaignops.core.errors import CampaignError
from campaignops.model import ledger

LOCAL_PAUSE_S = 2.0


def _local(root: Path, name: str) -> bool:
    try:
        return backends.module_for(backends.page(root, name)) == "local"
    except CampaignError:
        return False


def pause_s(root: Path, open_jobs: Iterable[ledger.Job], interval: float) -> float:
    """``interval``, or ``LOCAL_PAUSE_S`` when every open job is on a local backend."""
    names = {job.backend or "local" for job in open_jobs}
    if names and all(_local(root, name) for name in names):
        return min(interval, LOCAL_PAUSE_S)
    return interval
