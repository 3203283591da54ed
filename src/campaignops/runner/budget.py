"""The budget gate: a job's cost at its time limit, plus what the ledger already spent or holds in
reserve (backends/spending.py), against the cap; and the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from campaignops.backends.charging import amount, charging, job_charge
from campaignops.backends.spending import EPSILON, Cap, cap_for, spent, unpriced
from campaignops.model import backendpage
from campaignops.model.jobspec import Resources
from campaignops.model.ledger import Job
from campaignops.model.policy import Policy
from campaignops.runner.request import Request
from campaignops.runner.verdict import Verdict

GATE = "budget"
OVERRIDE_HINT = 'or pass --override "why this is worth it" (recorded in the ledger)'


def _passed(reason: str) -> Verdict:
    return Verdict(gate=GATE, passed=True, reason=reason)


def budget(
    request: Request, *, policy: Policy, page: Mapping[str, Any] | None, jobs: Iterable[Job]
) -> Verdict:
    """Refuse a job whose cost at its time limit, plus what the ledger already spent or holds
    in reserve, goes over the cap: budgets.cloud_usd for USD, else hpc_allocation_cap_percent
    of the allocation (campaign.yaml's budgets.allocations, else the page's). A page without
    a charging model costs nothing here (the local machine). ``request.override`` passes it,
    and the verdict carries the reason for the ledger."""
    backend = request.backend
    page_rel = backendpage.path_of(backend)
    model = charging(page)
    charge = job_charge(request.resources or Resources(), request.time_s, page)
    if model is None or charge is None:
        return _passed(f"no charging model on {page_rel}: cost not estimated")
    tasks = len(request.targets)
    override = (request.override or "").strip()

    def refuse(why: str, hint: str) -> Verdict:
        if override:
            return Verdict(gate=GATE, passed=True, reason=f"overridden: {why}", override=override)
        return Verdict(gate=GATE, passed=False, reason=why, hint=f"{hint}, {OVERRIDE_HINT}")

    cap, missing = cap_for(backend, model, policy)
    blocked = unpriced(backend, page, policy, request.resources or Resources(), request.time_s)
    if charge.time_s is None:
        if blocked is None:
            return _passed(f"no time limit: cost not estimated ({missing})")
        return refuse(*blocked)
    cost = charge.rate * tasks * charge.time_s / 3600
    this = (
        f"this job {amount(cost, model.unit)} ({tasks} task(s) × "
        f"{amount(charge.rate, model.unit)}/h × {charge.time_s / 3600:g} h)"
    )
    if request.earlier_cost:
        this += f" + its submission's earlier phases {amount(request.earlier_cost, model.unit)}"
        cost += request.earlier_cost
    if blocked is not None:  # the allocation's size is not known
        return refuse(f"{this}; {blocked[0]}", blocked[1])
    if cap is None:
        return _passed(f"{this}; not capped: {missing}")
    return _against(cap, cost, this, unit=model.unit, jobs=jobs, refuse=refuse)


def _against(
    cap: Cap,
    cost: float,
    this: str,
    *,
    unit: str,
    jobs: Iterable[Job],
    refuse: Callable[[str, str], Verdict],
) -> Verdict:
    """This submission's cost (``this`` says how it adds up) plus what the ledger already
    spent or holds in reserve, against the cap."""
    done = spent(jobs, unit=unit, backend=cap.backend)
    total = cost + done.total
    so_far = f"already spent or reserved {amount(done.total, unit)}"
    if done.uncounted:
        so_far += f" ({done.uncounted} earlier job(s) carry no charge and are not counted)"
    if total > cap.limit + EPSILON:
        return refuse(
            f"{this} + {so_far} = {amount(total, unit)}, over the cap "
            f"{amount(cap.limit, unit)} ({cap.source})",
            "shrink the job (fewer targets, a shorter resources.time, fewer nodes or GPUs), or "
            "raise the budget in campaign.yaml and commit",
        )
    return _passed(
        f"{this} + {so_far} = {amount(total, unit)} of the cap "
        f"{amount(cap.limit, unit)} ({cap.source})"
    )
