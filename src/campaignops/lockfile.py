"""Stub: .campaign/wrappers.lock (being written)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LockEntry:
    path: str
    digest: str
    date: dt.date
    line: int


def lock(
    *, root: Path, paths: Sequence[str], cwd: Path, today: dt.date | None = None
) -> list[LockEntry]:
    raise NotImplementedError
