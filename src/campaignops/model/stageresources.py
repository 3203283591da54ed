"""What a job of a manifest asks for at a stage: its resources, layered as the runner layers
them (the manifest's, then its phase's, then a smoke's ``smoke.resources``).

Below the runner so that ``campaign check`` judges the same request ``campaign submit`` sends
(a time limit over the partition's, a node count under its minimum: model/pagefit.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from campaignops.model.jobspec import Resources


def _resources(*layers: Mapping[str, Any] | None) -> Resources:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    known = {f.name for f in fields(Resources)}
    return Resources(**{k: v for k, v in merged.items() if k in known})


def resources_for(doc: Mapping[str, Any], phase: str | None, stage: str) -> Resources:
    """What a job of ``phase`` (None: the manifest's own targets) asks for at ``stage``: the
    manifest's resources, then the phase's, then (a smoke) ``smoke.resources``."""
    found = doc.get("smoke")
    smoke: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    own = next(
        (
            p.get("resources")
            for p in doc.get("phases") or ()
            if isinstance(p, Mapping) and p.get("name") == phase
        ),
        None,
    )
    layers: list[Mapping[str, Any] | None] = [
        doc.get("resources"),
        own,
        smoke.get("resources") if stage == "smoke" else None,
    ]
    if gpu_pool(doc) and not any(isinstance(x, Mapping) and "gpus" in x for x in layers):
        # The experiment-queue's GPU list runs one task per GPU: each task asks for one.
        layers.insert(0, {"gpus": 1})
    return _resources(*layers)


def gpu_pool(doc: Mapping[str, Any]) -> int:
    """How many GPUs the experiment-queue's top-level ``gpus`` names (a list of indices, or a
    count): each task gets one, and no more tasks than that run at once."""
    found = doc.get("gpus")
    if isinstance(found, list):
        return len(found)
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else 0


def source_of(
    doc: Mapping[str, Any], phase: str | None, stage: str, key: str
) -> tuple[str | int, ...] | None:
    """The YAML path of the layer that set ``key`` of resources_for(doc, phase, stage) (the
    last layer giving it wins, as there), or None: where a finding about it points."""
    layers: list[tuple[str | int, ...]] = [("resources",)]
    for i, p in enumerate(doc.get("phases") or ()):
        if isinstance(p, Mapping) and p.get("name") == phase:
            layers.append(("phases", i, "resources"))
            break
    if stage == "smoke":
        layers.append(("smoke", "resources"))
    found = None
    for at in layers:
        node: Any = doc
        for step in at:
            node = node.get(step) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and key in node:
            found = (*at, key)
    return found
