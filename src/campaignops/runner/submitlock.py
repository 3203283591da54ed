"""The campaign-wide submit lock: one submission at a time per campaign checkout (and the
refresh lock: one ``status --refresh`` at a time, see ``refreshing``).

``no_sibling`` reads the ledger and asks the scheduler; the submission then writes the ledger.
Without a lock between the two, concurrent submits of one target all pass the gate (10 of them
started 8 jobs). Under the lock the second submit reads the first's ledger record and is refused.
The lock is an ``flock`` on ``.campaign/submit.lock``: the kernel releases it when a submitting
process dies, so a crash never leaves the campaign locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from campaignops.core.errors import CampaignError

LOCK_FILE = ".campaign/submit.lock"
WAIT_S = 300.0
POLL_S = 0.05


class SubmitLocked(CampaignError):
    """Another submission held the campaign's submit lock for too long."""

    exit_code = 2


def _take(fd: int, timeout_s: float, busy: CampaignError) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise busy from None
            time.sleep(POLL_S)


class RefreshLocked(CampaignError):
    """Another refresh held the campaign's refresh lock for too long."""

    exit_code = 2


@contextlib.contextmanager
def held(root: Path, *, wait: bool = True, timeout_s: float = WAIT_S) -> Iterator[None]:
    """Hold the lock for the block. ``wait=False`` (a dry run) does not take it at all: a
    preview submits nothing, and must not queue behind a long submission."""
    if not wait:
        yield
        return
    path = root / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        busy = SubmitLocked(
            message=f"another campaign submit has held {LOCK_FILE} for over {timeout_s:g} s",
            hint="wait for it to finish (ps shows it), then submit again",
        )
        _take(fd, timeout_s, busy)
        yield
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def refreshing(root: Path, *, timeout_s: float = WAIT_S) -> Iterator[None]:
    """One ``campaign status --refresh`` at a time per checkout. Each reads the ledger, asks
    the scheduler and appends what changed: two at once both saw the job unfinished and both
    appended its end (6 runs, 3 identical COMPLETED records). Under this lock the second reads
    the first's records and has nothing to add.

    The flock is on the ``.campaign`` directory itself, not on the submit lock (a refresh
    that resubmits an OOM-killed job takes that one inside this one) and not on a new file (no
    file for existing campaigns to ignore in git)."""
    path = root / ".campaign"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise RefreshLocked(
            message=f"cannot lock {path} for the refresh: {exc.strerror or exc}",
            hint="the refresh writes the ledger there: make it a writable directory",
        ) from None
    try:
        busy = RefreshLocked(
            message=f"another campaign status --refresh has held {path} for over {timeout_s:g} s",
            hint="wait for it to finish (ps shows it), then refresh again",
        )
        _take(fd, timeout_s, busy)
        yield
    finally:
        os.close(fd)
