"""The ssh backend as the registry lists it: pages with ``kind: ssh``, and its answers beyond the
protocol (the box executor retries OOM itself, placements the page must vouch for, the shared
connections' warning, where a cell ran and what it cost)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Doubt, Kind
from campaignops.core.errors import CampaignError
from campaignops.model.catalog import GPU_OOM
from campaignops.model.ledger import Job

NEVER_CONNECTED = ": campaign pull, status, cancel and release never connect to it"
# The box executor's reason for an attempt it ran again: its oom_retry patterns (the catalog's
# GPU out-of-memory matchers) matched the attempt's log (remote/boxexec.py, Executor.ended).
RETRIED_OOM = re.compile(r"oom: attempt [0-9]+ of [0-9]+; retried")


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


def _category(exit_code: int | None, reason: str | None) -> str | None:
    return GPU_OOM if reason and RETRIED_OOM.fullmatch(reason) else None


def _cancel_tails(stdout: str, job_id: str) -> dict[int, str]:
    """What the cancel helper printed (``{"tails": {job: {index: text}}}``, backends/ssh/query.py,
    the box's text already checked and cut there): the job's tails by index."""
    from campaignops.backends.ssh.answers import index_of

    try:
        doc = json.loads(stdout) if stdout.strip() else None
    except (ValueError, RecursionError):
        return {}
    tails = doc.get("tails") if isinstance(doc, dict) else None
    found = tails.get(job_id) if isinstance(tails, dict) else None
    return {
        index: text
        for key, text in (found.items() if isinstance(found, dict) else ())
        if (index := index_of(key)) is not None and isinstance(text, str)
    }


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
    verdict_category=_category,
    cancel_tails=_cancel_tails,
)
