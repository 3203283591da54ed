"""How long `campaign status --watch` waits between rounds.

A round that queries a scheduler or a box over ssh is kept at least ``--interval`` apart (60 s
or more): that is what cluster admins ask. A backend whose query costs nothing (the local
executor's files on this machine) says how soon it may be asked again (``Kind.watch_pause_s``):
while every job still open is on such backends, the watch looks again after the longest of
their pauses, so the example's smoke, done in seconds, is not watched for a minute.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from campaignops.backends import registry as backends
from campaignops.model import ledger


def _pause(root: Path, name: str) -> float | None:
    kind = backends.kind_named(root, name)
    return kind.watch_pause_s if kind is not None else None


def pause_s(root: Path, open_jobs: Iterable[ledger.Job], interval: float) -> float:
    """``interval``, or a shorter pause when every open job's backend allows one."""
    pauses = [_pause(root, name) for name in {job.backend or "local" for job in open_jobs}]
    if pauses and all(p is not None for p in pauses):
        return min(interval, max(p for p in pauses if p is not None))
    return interval
