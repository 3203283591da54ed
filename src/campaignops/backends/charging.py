"""What a job costs on a backend: the page's charging model, one task's rate, the estimate.

A backend page's ``charging`` block (docs/formats.md, "Charging") says how the backend charges:
node-hours or GPU-hours of an HPC allocation, or USD for rented compute, per node or per GPU,
whole nodes or shares. Each array task is its own allocation, so a job costs
``tasks × (what one task holds) × per_hour × hours`` at its time limit (the most it may use).
The budget gate (runner/budget.py) compares that with what the ledger spent and the cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.jobspec import Resources

USD = "usd"
HPC_UNITS = ("node-hours", "gpu-hours")


@dataclass(frozen=True)
class Charging:
    """A page's charging model: ``per_hour`` units for each hour of one ``per`` (node, gpu)."""

    unit: str  # node-hours | gpu-hours | usd
    per: str  # node | gpu
    per_hour: float = 1.0
    whole_nodes: bool = False
    gpus_per_node: int | None = None
    allocation: float | None = None  # the project's allocation, in unit


@dataclass(frozen=True)
class Charge:
    """One job's charge, as the intent record keeps it: ``rate`` units per task-hour."""

    unit: str
    rate: float
    time_s: int | None  # the time limit each task may use; None: not known

    def record(self) -> dict[str, Any]:
        return {"unit": self.unit, "rate": self.rate, "time_s": self.time_s}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


def _instances_model(page: Mapping[str, Any]) -> Charging | None:
    """A kind: ssh page without a charging block: its instances' prices. A task holds one of
    an instance's task slots (a GPU of ``gpus``, else the whole box) for its hours, and the
    indices are dealt evenly, so a task's rate is the mean over instances of price / slots:
    tasks × rate × hours is then what the boxes bill while the job runs."""
    instances = page.get("instances")
    if page.get("kind") != "ssh" or not isinstance(instances, list):
        return None
    rates = []
    for box in instances:
        price = _number(box.get("usd_per_hour")) if isinstance(box, Mapping) else None
        if price is None:
            return None  # an instance without a price: the gate cannot bound the cost
        gpus = box.get("gpus")
        rates.append(price / (len(gpus) if isinstance(gpus, list) and gpus else 1))
    return Charging(unit=USD, per="node", per_hour=sum(rates) / len(rates)) if rates else None


def charging(page: Mapping[str, Any] | None) -> Charging | None:
    """The page's charging model, or None (no block, or one `campaign check` refuses)."""
    block = page.get("charging") if page else None
    if block is None and page:
        return _instances_model(page)
    if not isinstance(block, Mapping) or block.get("unit") not in (*HPC_UNITS, USD):
        return None
    unit = str(block["unit"])
    per = block.get("per") or ("gpu" if unit == "gpu-hours" else "node")
    gpus = block.get("gpus_per_node")
    if per not in ("node", "gpu") or (unit == USD and _number(block.get("per_hour")) is None):
        return None
    return Charging(
        unit=unit,
        per=str(per),
        per_hour=_number(block.get("per_hour")) or 1.0,
        whole_nodes=block.get("whole_nodes") is True,
        gpus_per_node=gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else None,
        allocation=_number(block.get("allocation")),
    )


def held(res: Resources, model: Charging) -> float:
    """How many nodes or GPUs (``model.per``) one task is charged for. ``resources.gpus`` is
    per node, as every backend renders it. Whole nodes: a task is charged every node it
    touches, and every GPU on it; else a node shared by GPU jobs is charged by GPU share."""
    nodes = res.nodes or 1
    gpus = res.gpus or 0
    per_node = model.gpus_per_node
    if model.per == "gpu":
        return float(nodes * (per_node if model.whole_nodes and per_node else gpus))
    if model.whole_nodes or not per_node or not gpus:
        return float(nodes)
    return nodes * min(gpus, per_node) / per_node


def _entry_limit(page: Mapping[str, Any], res: Resources) -> int | None:
    """The max_walltime of the partition or queue asked for, else the page's: what the
    scheduler lets a job without its own limit run for."""
    for key, asked in (("partitions", res.partition), ("queues", res.queue)):
        entries = page.get(key)
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and asked is not None and entry.get("name") == asked:
                limit = entry.get("max_walltime")
                if limit is not None:
                    return _parsed(limit)
    return _parsed(page.get("max_walltime")) if page.get("max_walltime") is not None else None


def _parsed(text: object) -> int | None:
    try:
        return walltime.parse(text)
    except CampaignError:
        return None


def job_charge(res: Resources, time_s: int | None, page: Mapping[str, Any] | None) -> Charge | None:
    """The charge of one task of a job (None: the page has no charging model). A job without
    its own time limit is charged at its partition's or the page's max_walltime."""
    model = charging(page)
    if model is None or page is None:
        return None
    limit = time_s if time_s is not None else _entry_limit(page, res)
    return Charge(unit=model.unit, rate=held(res, model) * model.per_hour, time_s=limit)


def estimate(
    res: Resources, tasks: int, time_s: int | None, page: Mapping[str, Any] | None
) -> float | None:
    """The most a job of ``tasks`` array tasks may cost, in the page's unit (None: no charging
    model, or no time limit to charge)."""
    charge = job_charge(res, time_s, page)
    if charge is None or charge.time_s is None:
        return None
    return charge.rate * tasks * charge.time_s / 3600


def amount(value: float, unit: str) -> str:
    """``12.5 node-hours``, ``3.20 USD``; a cost too small to show is ``<0.01``."""
    if 0 < value < 0.01:
        text = "<0.01"
    elif unit == USD:
        text = f"{value:,.2f}"
    else:
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{text} {'USD' if unit == USD else unit}"
