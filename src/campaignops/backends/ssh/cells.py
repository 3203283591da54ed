"""Where an ssh job's cell ran and what it cost: the instance and dollars STATUS.md shows.

A cell's cost is its run time × its instance's ``usd_per_hour`` ÷ the instance's slots (its
``gpus``, else 1: a cell holds one of them), the same share the budget gate charges a task
(campaignops.backends.charging). A cell not run yet, or on an instance without a price, has none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from campaignops.model import ledger


def instance_of(job: ledger.Job, index: int) -> str | None:
    """The instance the job's placement gave task ``index`` (None: not an ssh job)."""
    placed = job.record.get("placement")
    if not isinstance(placed, list):
        return None
    for entry in placed:
        if not isinstance(entry, Mapping):
            continue
        box = entry.get("instance")
        indices = entry.get("indices")
        if isinstance(box, Mapping) and isinstance(indices, list) and index in indices:
            name = box.get("name")
            return name if isinstance(name, str) else None
    return None


def prices(page: Mapping[str, Any] | None) -> dict[str, float]:
    """Each instance's USD per hour per slot, from a backend page's ``instances``."""
    found: dict[str, float] = {}
    listed = (page or {}).get("instances")
    for entry in listed if isinstance(listed, Sequence) and not isinstance(listed, str) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        usd = entry.get("usd_per_hour")
        if isinstance(usd, bool) or not isinstance(usd, (int, float)) or usd < 0:
            continue
        gpus = entry.get("gpus")
        slots = len(gpus) if isinstance(gpus, list) and gpus else 1
        found[entry["name"]] = float(usd) / slots
    return found


def cost(task: ledger.Task | None, rate: float | None) -> float | None:
    """A finished or running cell's dollars so far (run time × its slot's rate)."""
    if task is None or rate is None:
        return None
    seconds = task.run_time_s
    if seconds is None:  # a box answers with start and end times, not an elapsed figure
        start, end = ledger.parse_time(task.started), ledger.parse_time(task.ended)
        if start is None or end is None:
            return None
        seconds = max(0.0, (end - start).total_seconds())
    return seconds / 3600 * rate


def where(job: ledger.Job, target: str, page: Mapping[str, Any] | None) -> str | None:
    """``on box1, $0.0123`` for an ssh job's cell (its instance, its cost when known)."""
    index = job.index_of(target)
    name = None if index is None else instance_of(job, index)
    if name is None:
        return None
    usd = cost(job.task(target), prices(page).get(name))
    return f"on {name}" + ("" if usd is None else f", ${usd:.4f}")
