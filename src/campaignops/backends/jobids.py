"""Job ids for the backends this campaign numbers itself (local, local GPU, ssh).

One counter per state directory (``.next-id``), read and bumped under ``flock`` so concurrent
submits differ, never below a number already in use (a counter lost or reset must not hand one
out twice), plus 24 random bits, so two clones of one campaign, whose counters both start at 1,
never put the same id into the merged ledger.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable
from pathlib import Path


def allocate(state: Path, *, prefix: str, used: Callable[[], Iterable[int]], make_dir: bool) -> str:
    """``<prefix><n>-<6 hex>``; ``used()`` is asked under the lock; with ``make_dir`` the id's
    directory is created before the lock is released (it is then taken)."""
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / ".next-id", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        n = max(int(text) if text.isdigit() else 1, max(used(), default=0) + 1)
        job_id = f"{prefix}{n}-{os.urandom(3).hex()}"  # = secrets.token_hex(3), lighter to import
        if make_dir:
            (state / job_id).mkdir()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{n + 1}\n".encode("ascii"), 0)
        os.fsync(fd)
        return job_id
    finally:
        os.close(fd)
