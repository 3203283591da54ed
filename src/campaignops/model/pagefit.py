"""Whether a stage's request fits the backend page: a partition or queue it does not list, a
time limit over the row's ``max_walltime`` (else the page's), a node count under the row's
``min_nodes`` or over its ``max_nodes``.

One rule for two callers: the authorized gate refuses such a submission, and ``campaign check``
reports it (MAN018) at the manifest line that asked for it, before anything is submitted.
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


PLACES = ("partition", "queue")


def names(page: Mapping[str, Any]) -> list[str]:
    """The partition and queue names a page lists (``partitions`` or ``queues``: PBS pages list
    queues in either; a name may repeat)."""
    out: list[str] = []
    for key in ("partitions", "queues"):
        entries = page.get(key)
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                out.append(entry["name"])
    return out


def misfits(res: Resources, page: Mapping[str, Any] | None, *, page_path: str) -> list[Misfit]:
    """What in ``res`` the page says the backend does not have (a partition or queue it does
    not list), refuses or cuts short (its row's limits)."""
    if not page:
        return []
    listed = names(page)
    for kind, place in (("partition", res.partition), ("queue", res.queue)):
        if place is not None and place not in listed:
            known = ", ".join(dict.fromkeys(listed)) or "none listed"
            return [
                Misfit(
                    kind,
                    f"{kind} {place!r} is not on {page_path} ({known})",
                    f"use one of them in the manifest's resources, or add {place} to the "
                    "page's partitions (with its source and verified date) and commit",
                )
            ]
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


def smoke_too_long(time_s: int | None, cap_minutes: int | None) -> Misfit | None:
    """A smoke whose time limit is over the policy's stages.smoke_max_minutes (the smoke_first
    gate refuses it), or None."""
    if time_s is None or cap_minutes is None or time_s <= cap_minutes * 60:
        return None
    return Misfit(
        "time",
        f"the smoke's time limit is {time_s // 60} min ({time_s} s), over "
        f"stages.smoke_max_minutes {cap_minutes} in campaign.yaml",
        "cut the run length (smoke.args) and the smoke's time (smoke.resources.time) "
        f"to fit {cap_minutes} minutes: a smoke is there to fail fast",
    )
