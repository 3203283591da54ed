"""What a submission is made of, read from the campaign: the versioned wrappers the tasks
call, and the hardware gaps between a smoke and the stage asked for. A queue file's cells and
each target's fingerprint are model/makeup.py's (the stages view reads them too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.core import layout
from campaignops.model import accelerator
from campaignops.model.makeup import fingerprints as fingerprints  # re-exported: asked
from campaignops.model.makeup import named_digests as named_digests  # re-exported: review
from campaignops.model.makeup import queue_cells as queue_cells  # re-exported: submit, review
from campaignops.runner import plan

WRAPPER_REF = re.compile(r"(?<![\w./-])(scripts/[\w./-]+\.v[1-9][0-9]*\.[A-Za-z0-9]+)")


def wrappers_in(tasks: Sequence[str], root: Path) -> tuple[str, ...]:
    """The versioned wrappers the tasks call by path (they are locked at first use)."""
    found = {m.group(1) for t in tasks for m in WRAPPER_REF.finditer(t)}
    return tuple(sorted(p for p in found if (root / layout.guard_length(p)).is_file()))


HARDWARE_GAP = (
    "the smoke asks for {smoke} on {smoke_backend}, {stage} for {now} on {backend}: a smoke "
    "counts only for the hardware class it ran on"
)


def hardware_gaps(
    doc: Mapping[str, Any],
    groups: Mapping[str, str | None],
    *,
    stage: str,
    going: tuple[str, Mapping[str, Any] | None],
    smoke: tuple[str, Mapping[str, Any] | None],
) -> dict[str, str]:
    """For each planned group (its phase, or None) whose smoke (on the backend a smoke goes
    to) asks for another hardware class than ``stage`` does (on ``going``): why no smoke can
    unlock it (the smoke_first gate's refusal says so)."""
    out: dict[str, str] = {}
    if stage == "smoke":
        return out
    for group, phase in groups.items():
        now = accelerator.of(plan.resources_for(doc, phase, stage), going[1])
        then = accelerator.of(plan.resources_for(doc, phase, "smoke"), smoke[1])
        if now != then:
            out[group] = HARDWARE_GAP.format(
                smoke=then, smoke_backend=smoke[0], stage=stage, now=now, backend=going[0]
            )
    return out
