"""What the ledger says was spent against each backend's cap (the budget gate, runner/budget.py,
and STATUS.md's budget block read it).

What a job costs is backends/charging.py's: a page's charging model, one task's rate, a job's
estimate at its time limit. Every submission records its charge in the ledger's intent record
(``charge``: unit, rate per task-hour, time limit), so what was spent is read from the ledger
alone, at the price of the day it was submitted: finished tasks at their run time, live ones at
their time limit (a reservation: what they may still burn). Pure functions; ``read_summary`` is
the one reader (for status).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends.charging import (
    USD,
    Charge,
    Charging,
    amount,
    charging,
    estimate,
    job_charge,
)
from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError
from campaignops.model import backendpage, ledger
from campaignops.model import policy as policy_mod
from campaignops.model.jobspec import Resources
from campaignops.model.ledger import Job
from campaignops.model.policy import Policy
from campaignops.model.states import FINISHED

ALLOCATION_UNKNOWN = "no allocation size"  # cap_for's answer that refuses, not passes
# Costs are sums of floats: one at the cap to within this is at the cap, not over it.
EPSILON = 1e-9


@dataclass(frozen=True)
class Spent:
    """What the ledger's jobs cost, in ``unit``: ``used`` by finished tasks (their run time) and
    running ones (so far), ``reserved`` by live ones up to their time limit; ``uncounted``
    jobs carry no charge (submitted before the page had a charging model)."""

    unit: str
    used: float = 0.0
    reserved: float = 0.0
    uncounted: int = 0

    @property
    def total(self) -> float:
        return self.used + self.reserved


def _text(fields: Mapping[str, Any], key: str) -> str | None:
    value = fields.get(key)
    return value if isinstance(value, str) else None


def _task_hours(
    fields: Mapping[str, Any], limit: int | None, now: dt.datetime | None
) -> tuple[float, float]:
    """(used, reserved) hours of one task, from its fields (as ``ledger.Task.of`` reads them):
    finished at its run time (its limit when the run time is not known, unless it never
    started); live at what ran so far plus the rest of its limit."""
    cap = (limit or 0) / 3600
    state = _text(fields, "state")
    if state in FINISHED:
        run = fields.get("run_time_s")
        if isinstance(run, bool) or not isinstance(run, (int, float)) or run < 0:
            run = None
        started = ledger.parse_time(_text(fields, "started"))
        if run is None and started is not None:
            ended = ledger.parse_time(_text(fields, "ended"))
            run = (ended - started).total_seconds() if ended and ended >= started else None
        if run is not None:
            return run / 3600, 0.0
        return (0.0, 0.0) if started is None and state == "CANCELLED" else (cap, 0.0)
    if state == "UNKNOWN":  # the job ended and this task's end was never read: its limit
        return cap, 0.0
    so_far = 0.0
    if state == "RUNNING" and now is not None:
        started = ledger.parse_time(_text(fields, "started"))
        if started is not None:
            so_far = max(0.0, min((now - started).total_seconds() / 3600, cap or math.inf))
    return so_far, max(cap - so_far, 0.0)


def _each_task(job: Job) -> Iterator[Mapping[str, Any]]:
    """Each array task's fields, where ``Job.task`` reads them, in one pass and without
    building a Task each: a year of 1,000-task arrays must not cost a scan per task."""
    count = len(job.targets)
    tasks = job.record.get("tasks")
    per_task = isinstance(tasks, Mapping)
    ended = {"state": "UNKNOWN" if job.state in FINISHED else job.state}
    for index in range(count):
        own = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
        if isinstance(own, Mapping) and isinstance(own.get("state"), str):
            yield own
        elif count == 1 or not per_task:
            yield job.record
        else:
            yield ended


def recorded_charge(job: Job) -> Charge | None:
    value = job.record.get("charge")
    if not isinstance(value, Mapping) or not isinstance(value.get("unit"), str):
        return None
    rate, limit = value.get("rate"), value.get("time_s")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0:
        return None
    good = isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0
    return Charge(unit=value["unit"], rate=float(rate), time_s=limit if good else None)


def spent(
    jobs: Iterable[Job], *, unit: str, backend: str | None, now: dt.datetime | None = None
) -> Spent:
    """What the ledger's jobs charged in ``unit``: on ``backend`` (an HPC allocation is one
    machine's), or on every backend (``None``: USD is one budget, wherever it was spent).
    A submission the scheduler refused costs nothing; one whose outcome is unknown is
    reserved at its limit until status --refresh settles it."""
    used = reserved = 0.0
    uncounted = 0
    for job in jobs:
        if backend is not None and job.backend != backend:
            continue
        if job.error and not job.job_id:
            continue
        costs = task_costs(job, now=now)
        if costs is None:
            uncounted += backend is not None
            continue
        if costs[0] != unit:
            continue
        for u, r in costs[1]:
            used += u
            reserved += r
    return Spent(unit=unit, used=used, reserved=reserved, uncounted=uncounted)


def task_costs(
    job: Job, *, now: dt.datetime | None = None
) -> tuple[str, tuple[tuple[float, float], ...]] | None:
    """The unit of ``job``'s recorded charge and each array task's (used, reserved) in it, in
    ``targets`` order, at the price of its submission day; None: the job carries no charge."""
    charge = recorded_charge(job)
    if charge is None:
        return None
    hours = (_task_hours(task, charge.time_s, now) for task in _each_task(job))
    return charge.unit, tuple((u * charge.rate, r * charge.rate) for u, r in hours)


@dataclass(frozen=True)
class Cap:
    """The most ``unit`` the campaign may spend on a backend, and where that number comes from."""

    unit: str
    limit: float
    source: str
    backend: str | None  # None: shared by every backend charging in USD


def cap_for(backend: str, model: Charging, policy: Policy) -> tuple[Cap | None, str | None]:
    """(the cap, None), or (None, why there is none: a reason to pass or to refuse)."""
    if model.unit == USD:
        if policy.cloud_usd is None:
            return None, "budgets.cloud_usd is not set in campaign.yaml"
        return Cap(USD, policy.cloud_usd, "budgets.cloud_usd", None), None
    pct = policy.hpc_allocation_cap_percent
    if pct is None:
        return None, "budgets.hpc_allocation_cap_percent is not set in campaign.yaml"
    size = policy.allocations.get(backend)
    where = f"budgets.allocations.{backend}"
    if size is None and model.allocation is not None:
        size, where = model.allocation, f"{backendpage.path_of(backend)} charging.allocation"
    if size is None:
        return None, ALLOCATION_UNKNOWN
    source = f"{pct:g}% of the {amount(size, model.unit)} allocation ({where})"
    return Cap(model.unit, size * pct / 100, source, backend), None


NO_TIME = "no time limit: the cost on {page} cannot be estimated"
NO_TIME_FIX = "set resources.time in the manifest (or max_walltime on {page})"
NO_ALLOCATION = "the allocation hpc_allocation_cap_percent is a share of is not known"
NO_ALLOCATION_FIX = (
    "set budgets.allocations.{backend} in campaign.yaml to the allocation's size in {unit} "
    "(sbank or your site's portal shows it)"
)


def unpriced(
    backend: str, page: Mapping[str, Any] | None, policy: Policy, res: Resources, time_s: int | None
) -> tuple[str, str] | None:
    """(why, what to do) where the budget gate must refuse whatever the ledger holds: a capped
    backend with no time limit to price a job by, or an allocation share of an allocation whose
    size neither campaign.yaml nor the page gives; else None. The files decide it, so
    `campaign check` reports it too (MAN018)."""
    model, charge = charging(page), job_charge(res, time_s, page)
    if model is None or charge is None:
        return None
    cap, missing = cap_for(backend, model, policy)
    page_rel = backendpage.path_of(backend)
    if charge.time_s is None and (cap is not None or missing == ALLOCATION_UNKNOWN):
        return NO_TIME.format(page=page_rel), NO_TIME_FIX.format(page=page_rel)
    if missing == ALLOCATION_UNKNOWN:
        return NO_ALLOCATION, NO_ALLOCATION_FIX.format(backend=backend, unit=model.unit)
    return None


OVER_ALONE = (
    "one task at its time limit costs {cost}, over the cap {cap} ({source}) before anything "
    "is spent: the budget gate refuses every submission of it"
)
OVER_ALONE_FIX = (
    "shorten resources.time or ask for fewer nodes or GPUs (one task may cost {cap} at most), "
    "or raise the cap in campaign.yaml and commit"
)


def over_alone(
    backend: str, page: Mapping[str, Any] | None, policy: Policy, res: Resources, time_s: int | None
) -> tuple[str, str] | None:
    """(why, what to do) where a single task of the job, at its time limit, already costs more
    than the cap: the budget gate adds what the ledger spent to it, never less, so it refuses
    whatever the ledger holds (the smallest submission is one target). None: within the cap,
    or not capped. The files decide it, so `campaign check` reports it too (MAN018)."""
    model, cost = charging(page), estimate(res, 1, time_s, page)
    if model is None or cost is None:
        return None
    cap, _ = cap_for(backend, model, policy)
    if cap is None or cost <= cap.limit + EPSILON:
        return None
    limit = amount(cap.limit, model.unit)
    why = OVER_ALONE.format(cost=amount(cost, model.unit), cap=limit, source=cap.source)
    return why, OVER_ALONE_FIX.format(cap=limit)


def _share(total: float, cap: Cap) -> str:
    return f"{100 * total / cap.limit:.0f}%" if cap.limit > 0 else "over" if total else "0%"


def summary(
    policy: Policy,
    pages: Mapping[str, Mapping[str, Any] | None],
    jobs: Iterable[Job],
    now: dt.datetime | None = None,
) -> str:
    """Spent against budget, per authorized backend, as a Markdown table and notes ("" when no
    backend has a charging model). USD is one budget across every backend that charges it."""
    jobs = jobs if isinstance(jobs, Sequence) else list(jobs)  # read only if a backend charges
    rows = ["| backend | spent | reserved | cap | of cap |", "| --- | --- | --- | --- | --- |"]
    notes: list[str] = []
    free: list[str] = []
    cloud: Spent | None = None  # every USD backend's: asked only when a cap is shared
    for name in policy.backends:
        model = charging(pages.get(name))
        if model is None:
            free.append(name)
            continue
        mine = spent(jobs, unit=model.unit, backend=name, now=now)
        cap, missing = cap_for(name, model, policy)
        if cap is None:
            limit = "allocation size not set" if missing == ALLOCATION_UNKNOWN else "not set"
            share = "-"
        else:
            if cap.backend is None and cloud is None:
                cloud = spent(jobs, unit=USD, backend=None, now=now)
            total = cloud.total if cap.backend is None and cloud is not None else mine.total
            shared = ", every USD backend" if cap.backend is None else ""
            limit = f"{amount(cap.limit, cap.unit)} ({cap.source}{shared})"
            share = _share(total, cap)
        used, held_back = amount(mine.used, model.unit), amount(mine.reserved, model.unit)
        rows.append(f"| {name} | {used} | {held_back} | {limit} | {share} |")
        if mine.uncounted:
            notes.append(
                f"{mine.uncounted} job(s) on {name} carry no charge (submitted before its page "
                "had a charging model): not counted"
            )
    if len(rows) == 2:
        return ""
    if free:
        notes.append(f"not charged (no charging model on their page): {', '.join(free)}")
    notes.append("reserved: what queued and running tasks may still use, up to their time limit")
    return "\n".join(rows + notes)


def read_summary(
    root: Path, now: dt.datetime | None = None, *, jobs: Iterable[Job] | None = None
) -> str:
    """``summary`` of the campaign at ``root``: its policy, its backend pages, its ledger
    (``jobs``, when the caller has read it already)."""
    try:
        doc = yamldoc.load(
            (root / layout.POLICY_FILE).read_text(encoding="utf-8"), path=layout.POLICY_FILE
        )
    except (CampaignError, OSError, UnicodeDecodeError):
        return ""  # campaign check reports the policy's problems; status still shows the jobs
    policy = policy_mod.from_data(doc)
    pages: dict[str, Mapping[str, Any] | None] = {}
    for name in policy.backends:
        try:
            pages[name] = backend_base.page(root, name)
        except (CampaignError, OSError, UnicodeDecodeError):
            pages[name] = None
    return summary(policy, pages, ledger.read(root).jobs if jobs is None else jobs, now)
