"""What each SSH box has cost so far: the meter ``campaign status`` shows for rented instances.

The runner never rents a box, so it cannot know when a box was launched: an instance's clock
starts at the first job the ledger placed on it and stops when ``campaign release`` let go of
it (a box rented earlier, or left running after a release that only printed the command,
costs more than this). Dollars are those hours × the instance's ``usd_per_hour`` on its
backend page. At 80 % of ``budgets.cloud_usd`` status warns, because a forgotten box bills
around the clock (remote-gpu-trainer seed, the teardown rule).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops.backends import base as backends
from campaignops.backends.ssh import instances as sshinstances
from campaignops.backends.ssh import pull
from campaignops.backends.ssh.instances import Instance
from campaignops.backends.ssh.kind import KIND
from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError
from campaignops.model import ledger
from campaignops.model import policy as policy_mod

WARN_FRACTION = 0.8


@dataclass(frozen=True)
class Meter:
    instance: str
    backend: str
    since: dt.datetime
    until: dt.datetime | None  # released at; None while the instance is still held
    usd_per_hour: float | None

    def hours(self, now: dt.datetime) -> float:
        return max(0.0, ((self.until or now) - self.since).total_seconds() / 3600)

    def usd(self, now: dt.datetime) -> float | None:
        return None if self.usd_per_hour is None else self.hours(now) * self.usd_per_hour


def meters(jobs: Iterable[ledger.Job], prices: Mapping[str, Sequence[Instance]]) -> list[Meter]:
    """One meter per instance the ledger placed jobs on (``prices``: backend → its page's
    instances, for ``usd_per_hour``)."""
    since: dict[str, tuple[dt.datetime, str]] = {}
    released: dict[str, dt.datetime] = {}
    held: set[str] = set()  # a task on it not released yet: a job placed after a release
    for job in jobs:
        # Most jobs hold no placement: looked at no further (their tasks are a year's history).
        shares = pull.placements([job]) if "placement" in job.record else []
        if not shares:
            continue
        when = ledger.parse_time(job.text("submitted")) or ledger.parse_time(job.first_time)
        tasks = job.record.get("tasks")
        for share in shares:
            name = share.instance.name
            if when is not None and (name not in since or when < since[name][0]):
                since[name] = (when, job.backend or "")
            # Released when a release record marked the share's tasks (the latest one wins).
            for index in share.indices:
                fields = tasks.get(str(index)) if isinstance(tasks, dict) else None
                at = ledger.parse_time(fields.get("released")) if isinstance(fields, dict) else None
                if at is None:
                    held.add(name)
                else:
                    released[name] = max(at, released.get(name, at))
    rates = {i.name: i.usd_per_hour for box in prices.values() for i in box}
    out = []
    for name, (start, backend) in sorted(since.items()):
        end = None if name in held else released.get(name)
        out.append(
            Meter(name, backend, start, end if end and end >= start else None, rates.get(name))
        )
    return out


def lines(found: Sequence[Meter], now: dt.datetime) -> list[str]:
    """The table ``campaign status`` prints (a Markdown table, aligned by the caller)."""
    rows = ["| instance | backend | since | hours | USD/h | USD | held |", "| --- |"]
    for m in found:
        usd = m.usd(now)
        rows.append(
            "| "
            + " | ".join(
                [
                    m.instance,
                    m.backend,
                    m.since.strftime("%Y-%m-%d %H:%M"),
                    f"{m.hours(now):.2f}",
                    "?" if m.usd_per_hour is None else f"{m.usd_per_hour:g}",
                    "?" if usd is None else f"{usd:.2f}",
                    "released" if m.until else "yes",
                ]
            )
            + " |"
        )
    return rows


def warning(found: Sequence[Meter], now: dt.datetime, cap: float | None) -> str | None:
    """The 80 % warning, or None (no cap, no priced instance, or under it)."""
    total = sum(u for m in found if (u := m.usd(now)) is not None)
    if not cap or total < WARN_FRACTION * cap:
        return None
    held = [m.instance for m in found if m.until is None]
    return (
        f"warning: SSH instances have cost ${total:.2f} of budgets.cloud_usd ${cap:g} "
        f"({100 * total / cap:.0f} %); still held: {', '.join(held) or 'none'}: pull, verify "
        "and campaign release what is done"
    )


def read(root: Path, jobs: Sequence[ledger.Job]) -> tuple[list[Meter], float | None]:
    """The meters of the campaign at ``root`` and its ``budgets.cloud_usd`` (pages that cannot
    be read price nothing: campaign check reports them)."""
    try:
        doc = yamldoc.load(
            (root / layout.POLICY_FILE).read_text(encoding="utf-8"), path=layout.POLICY_FILE
        )
        policy = policy_mod.from_data(doc)
    except (CampaignError, OSError, UnicodeDecodeError):
        return [], None
    prices: dict[str, tuple[Instance, ...]] = {}
    for name in policy.backends:
        try:
            page = backends.page(root, name)
            if page is not None and KIND.serves(page):
                prices[name] = sshinstances.of_page(root, name, page)
        except (CampaignError, OSError, UnicodeDecodeError):
            continue
    return meters(jobs, prices), policy.cloud_usd
