"""The campaign-wide submit lock: one submission at a time per campaign checkout.

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

from campaignops.errors import CampaignError

LOCK_FILE = ".campaign/submit.lock"
WAIT_S = 300.0
POLL_S = 0.05


class SubmitLocked(CampaignError):
    """Another submission held the campaign's submit lock for too long."""

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
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SubmitLocked(
                        message=f"another campaign submit has held {LOCK_FILE} for over "
                        f"{timeout_s:g} s",
                        hint="wait for it to finish (ps shows it), then submit again",
                    ) from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # releases the flock
