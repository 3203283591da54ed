"""What each SSH box has cost so far: the meter ``campaign status`` shows for rented instances.

The runner never rents a box, so it cannot know when a box was launched: an instance's clock
starts at the first job the ledger placed on it and stops when ``campaign release`` let go of
it (a box rented earlier, or left running after a release that only printed the command,
costs more than this). Dollars are those hours × the instance's ``usd_per_hour`` on its
backend page. At 80 % of ``budgets.cloud_usd`` status warns, because a forgotten box bills
around the clock (remote-gpu-trainer seed, the teardown rule); and it warns for every held
instance that has run no task for ``budgets.idle_warn_minutes`` (default 30): idle since the
last end of a task placed on it, while none of its tasks is unfinished. Where the page gives a
``self_stop`` and ``budgets.idle_stop_minutes`` is set, status also says when the box stops
itself (campaignops.backends.ssh.selfstop).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops.backends import base as backends
from campaignops.backends.ssh import instances as sshinstances
from campaignops.backends.ssh import pull, selfstop
from campaignops.backends.ssh.instances import Instance
from campaignops.backends.ssh.kind import KIND
from campaignops.core.errors import CampaignError
from campaignops.model import backendpage, ledger
from campaignops.model import policy as policy_mod

WARN_FRACTION = 0.8


@dataclass(frozen=True)
class Meter:
    instance: str
    backend: str
    since: dt.datetime
    until: dt.datetime | None  # released at; None while the instance is still held
    usd_per_hour: float | None
    # The last end of a task placed on it, when every one of them has ended; else None.
    idle_since: dt.datetime | None = None
    # Its page gives a self_stop (run on the box once budgets.idle_stop_minutes have passed).
    self_stop: bool = False

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
    ends = _Ends()
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
                fields = fields if isinstance(fields, dict) else {}
                # How the task ended is read as everywhere (Job.task: its array task's record,
                # else, for a job of one target, the job's own): a one-cell job has no tasks.
                ends.saw(name, job.task(job.targets[index]) if index < len(job.targets) else None)
                at = ledger.parse_time(fields.get("released"))
                if at is None:
                    held.add(name)
                else:
                    released[name] = max(at, released.get(name, at))
    rates = {i.name: i.usd_per_hour for box in prices.values() for i in box}
    out = []
    for name, (start, backend) in sorted(since.items()):
        end = None if name in held else released.get(name)
        until = end if end and end >= start else None
        out.append(Meter(name, backend, start, until, rates.get(name), ends.idle_since(name)))
    return out


class _Ends:
    """Per instance: whether a task on it has not ended, and its tasks' last end."""

    def __init__(self) -> None:
        self.busy: set[str] = set()
        self.last: dict[str, dt.datetime] = {}

    def saw(self, name: str, task: ledger.Task | None) -> None:
        ended = ledger.parse_time(task.ended) if task is not None else None
        if task is None or not task.finished or ended is None:
            self.busy.add(name)
        elif name not in self.last or ended > self.last[name]:
            self.last[name] = ended

    def idle_since(self, name: str) -> dt.datetime | None:
        return None if name in self.busy else self.last.get(name)


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


def idle(found: Sequence[Meter], now: dt.datetime, minutes: int) -> list[str]:
    """A warning for each held instance that has run no task for ``minutes`` or more."""
    out = []
    for m in found:
        if m.until is not None or m.idle_since is None:
            continue
        idle_min = (now - m.idle_since).total_seconds() / 60
        if idle_min < minutes:
            continue
        cost = (
            ""
            if m.usd_per_hour is None
            else (f", ${idle_min / 60 * m.usd_per_hour:.2f} at ${m.usd_per_hour:g}/h since then")
        )
        out.append(
            f"warning: SSH instance {m.instance} ({m.backend}) is held but has run no task for "
            f"{idle_min:.0f} min (since {m.idle_since.strftime('%Y-%m-%d %H:%M')} UTC{cost}): "
            "campaign pull, then campaign release it, or stop it with its page's release command"
        )
    return out


def stops(found: Sequence[Meter], now: dt.datetime, minutes: float | None) -> list[str]:
    """When each held, idle instance whose page gives a self_stop stops itself
    (``budgets.idle_stop_minutes``; None: never)."""
    if minutes is None:
        return []
    return [
        selfstop.when(m.instance, m.backend, m.idle_since, now, minutes)
        for m in found
        if m.until is None and m.idle_since is not None and m.self_stop
    ]


def read(root: Path, jobs: Sequence[ledger.Job]) -> tuple[list[Meter], policy_mod.Policy]:
    """The meters of the campaign at ``root`` and its policy (``budgets.cloud_usd``,
    ``budgets.idle_warn_minutes``, ``budgets.idle_stop_minutes``); pages that cannot be read
    price nothing: campaign check reports them."""
    policy = policy_mod.read(root)
    if not policy.found:
        return [], policy
    prices: dict[str, tuple[Instance, ...]] = {}
    stopping: set[str] = set()  # the backends whose page gives a self_stop
    for name in policy.backends:
        try:
            page = backends.page(root, name)
            if page is not None and KIND.serves(page):
                prices[name] = sshinstances.of_page(root, name, page)
                if backendpage.self_stop(page) is not None:
                    stopping.add(name)
        except (CampaignError, OSError, UnicodeDecodeError):
            continue
    found = meters(jobs, prices)
    return [dataclasses.replace(m, self_stop=m.backend in stopping) for m in found], policy
