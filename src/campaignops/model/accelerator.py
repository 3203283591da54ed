"""The hardware class a job runs on, as the smoke-first gate compares it: ``cpu``, ``gpu``, or
``gpu:<model>``.

Where a job runs (partition, QoS) is masked from the fingerprint: smokes run on testing
partitions. What it runs on is not: a CPU-only smoke says nothing about an A100 production, nor
an A100 smoke about an H200 one. The class comes from the job's own request (``resources.gpus``,
``resources.gpu_type``), else from the requested partition's row on the backend page
(``gpu_type``). A smoke partition whose row says ``smoke_for: <partition>`` stands in for that
production partition: it takes that partition's class (e.g. Alpine's MIG-slice testing QoS for
its A100 production partition), which the page's author vouches for with a source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaignops.model.jobspec import Resources

CPU = "cpu"
GPU = "gpu"


def _rows(page: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    rows: list[Mapping[str, Any]] = []
    for key in ("partitions", "queues"):
        entries = (page or {}).get(key)
        rows += [r for r in entries if isinstance(r, Mapping)] if isinstance(entries, list) else []
    return rows


def row(page: Mapping[str, Any] | None, name: str, qos: str | None) -> Mapping[str, Any] | None:
    """The page's row for a partition (and QoS, where rows differ by QoS only)."""
    named = [r for r in _rows(page) if r.get("name") == name]
    exact = [r for r in named if qos is not None and r.get("qos") == qos]
    found = exact or named
    return found[0] if found else None


def _model(row: Mapping[str, Any] | None) -> str | None:
    value = row.get("gpu_type") if row else None
    return str(value) if isinstance(value, str) and value.strip() else None


def of(resources: Resources, page: Mapping[str, Any] | None) -> str:
    """The class of a job asking for ``resources`` on the backend ``page`` describes."""
    if not resources.gpus:
        return CPU
    if resources.gpu_type:
        return f"{GPU}:{resources.gpu_type}"
    where = resources.partition or resources.queue
    found = row(page, where, resources.qos) if where else None
    stands_for = found.get("smoke_for") if found else None
    if isinstance(stands_for, str):
        production = [
            r for r in _rows(page) if r.get("name") == stands_for and r.get("purpose") != "smoke"
        ]
        found = production[0] if production else found
    model = _model(found)
    return f"{GPU}:{model}" if model else GPU
