"""The ssh backend as the registry lists it: pages with ``kind: ssh``, and its answers beyond the
protocol (the box executor retries OOM itself, placements the page must vouch for, the shared
connections' warning, where a cell ran and what it cost)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Doubt, Kind
from campaignops.core.errors import CampaignError
from campaignops.model.ledger import Job

NEVER_CONNECTED = ": campaign pull, status, cancel and release never connect to it"


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("kind") == "ssh"


# Each hook imports its module when asked, not with the registry: campaign check loads every
# kind, and the ssh modules (the transport, the box executor's source) are not light.


def _make(root: Path, name: str) -> Backend:
    from campaignops.backends.ssh.backend import SshBackend

    return SshBackend(root, name)


def _always(job_id: str) -> bool:
    return True


def _refusals(root: Path, job_ids: Iterable[str]) -> list[str]:
    from campaignops.backends.ssh import placement

    return placement.refusals(root, job_ids)


def _warning() -> str | None:
    from campaignops.backends.ssh import link

    return link.control().warning


def _cell_note(job: Job, target: str, page: Mapping[str, Any] | None) -> str | None:
    from campaignops.backends.ssh import cells

    return cells.where(job, target, page)


def _doubts(root: Path) -> Iterator[Doubt]:
    from campaignops.backends.ssh import placement

    for u in placement.unvouched(root):
        what = placement.REFUSED_WHAT.format(
            job_id=u.job_id, name=u.name, backend=u.backend, what=u.what
        )
        yield Doubt(
            line=u.line,
            message=what + NEVER_CONNECTED,
            hint=placement.REFUSED_HINT.format(job_id=u.job_id),
        )


def _aliases(root: Path, name: str, page: Mapping[str, Any] | None) -> frozenset[str]:
    from campaignops.backends.ssh.instances import of_page

    try:
        found = of_page(root, name, page)
    except CampaignError:
        return frozenset()  # no instances: the page's own check says so
    return frozenset(x for i in found for x in (i.name, i.host))


KIND = Kind(
    name="ssh",
    serves=_serves,
    make=_make,
    box_keys=True,
    self_stops=True,
    retries_oom_itself=_always,
    refusals=_refusals,
    query_warning=_warning,
    doubts=_doubts,
    cell_note=_cell_note,
    aliases=_aliases,
)
