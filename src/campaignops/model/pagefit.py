"""Whether a stage's request fits the backend page's row for its partition or queue: a time
limit over the row's ``max_walltime`` (else the page's), a node count under the row's
``min_nodes`` or over its ``max_nodes``.

One rule for two callers: the authorized gate refuses such a submission, and ``campaign check``
reports it (MAN020) at the manifest line that asked for it, before anything is submitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.accelerator import row
from campaignops.model.jobspec import Resources


@dataclass(frozen=True)
class Misfit:
    key: str  # the resources key that asks for what the page does not give: time, nodes
    problem: str
    fix: str


def _seconds(text: object) -> int | None:
    try:
        return walltime.parse(text)
    except CampaignError:
        return None  # a limit in no accepted form is the schema's finding, not this one's


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def misfits(res: Resources, page: Mapping[str, Any] | None, *, page_path: str) -> list[Misfit]:
    """What in ``res`` the page's row (or the page) says the backend refuses or cuts short."""
    if not page:
        return []
    where = res.partition or res.queue
    found = row(page, where, res.qos) if where else None
    named = f"{where!r}" + (f" (qos {res.qos})" if res.qos and found else "")
    out: list[Misfit] = []
    cap_text = (found or {}).get("max_walltime") or page.get("max_walltime")
    asked, cap = _seconds(res.time), _seconds(cap_text)
    if asked is not None and cap is not None and asked > cap:
        owner = f"partition {named}" if found and "max_walltime" in found else "the page"
        out.append(
            Misfit(
                "time",
                f"time {res.time!r} is over the max_walltime {cap_text!r} {page_path} gives "
                f"for {owner}: the scheduler refuses it or never starts it",
                f'ask for at most "{cap_text}" (resources.time), or use a partition or QoS whose '
                f"row on {page_path} allows {res.time!r} (a purpose: long row)",
            )
        )
    nodes = res.nodes or 1
    least, most = _int((found or {}).get("min_nodes")), _int((found or {}).get("max_nodes"))
    if least is not None and nodes < least:
        out.append(
            Misfit(
                "nodes",
                f"{nodes} node(s) is under the min_nodes {least} {page_path} gives for {named}",
                f"ask for nodes: {least} or more, or use a queue for fewer nodes (its row on "
                f"{page_path})",
            )
        )
    if most is not None and nodes > most:
        out.append(
            Misfit(
                "nodes",
                f"{nodes} nodes is over the max_nodes {most} {page_path} gives for {named}",
                f"ask for nodes: {most} or fewer, or use a partition whose row allows more",
            )
        )
    return out
