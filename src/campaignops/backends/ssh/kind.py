"""The ssh backend as the registry lists it: pages with ``kind: ssh``, and its answers beyond the
protocol (the box executor retries OOM itself, placements the page must vouch for, the shared
connections' warning, where a cell ran and what it cost)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Doubt, Kind
from campaignops.backends.ssh import cells, link, placement
from campaignops.backends.ssh.backend import SshBackend

NEVER_CONNECTED = ": campaign pull, status, cancel and release never connect to it"


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("kind") == "ssh"


def _always(job_id: str) -> bool:
    return True


def _warning() -> str | None:
    return link.control().warning


def _doubts(root: Path) -> Iterator[Doubt]:
    for u in placement.unvouched(root):
        what = placement.REFUSED_WHAT.format(
            job_id=u.job_id, name=u.name, backend=u.backend, what=u.what
        )
        yield Doubt(
            line=u.line,
            message=what + NEVER_CONNECTED,
            hint=placement.REFUSED_HINT.format(job_id=u.job_id),
        )


KIND = Kind(
    name="ssh",
    serves=_serves,
    make=SshBackend,
    box_keys=True,
    retries_oom_itself=_always,
    refusals=placement.refusals,
    query_warning=_warning,
    doubts=_doubts,
    cell_note=cells.where,
)
