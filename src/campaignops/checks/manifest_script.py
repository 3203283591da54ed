"""MAN018 for what a backend's script cannot say: a request its renderer refuses (a key the
scheduler has no word for, a value no directive holds) and a job name it refuses (a target id
holding ``=`` is an id, and no Slurm or PBS job name).

Each asks the backend's own renderer through its Kind (``unsayable``, ``unnamable``), so a
manifest `campaign check` passes is one whose script submit can write
(tests/checks/test_check_equals_run.py lists the refusals).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from campaignops.backends import registry
from campaignops.checks.finding import Finding
from campaignops.checks.manifest_runs import CODES, Route, source
from campaignops.core.errors import CampaignError
from campaignops.core.yamldoc import Locator
from campaignops.model import manifest, stageresources
from campaignops.model.jobspec import Resources, job_name

UNSAYABLE_FIX = "change or drop resources.{key} for {backend}"
# A job is named <campaign>.<target>.<stage>: what to rename for each kind of target word.
RENAME_ID = "change the id (for a grid: template.id or the grid values)"
RENAME_PHASE = "rename the phase"
RENAME_FILE = "rename the manifest file"


def check(
    rel: str,
    doc: Mapping[str, Any],
    loc: Locator,
    *,
    routes: Sequence[Route],
    campaign: str,
    targets: Sequence[manifest.Target] | None = None,
) -> Iterator[Finding]:
    """``targets``: the manifest's, where the caller expanded them already."""
    yield from _unsayables(rel, doc, loc, routes)
    found = list(manifest.targets(doc)) if targets is None else targets
    yield from _unnamables(rel, doc, loc, routes, campaign, found)


def _unsayables(
    rel: str, doc: Mapping[str, Any], loc: Locator, routes: Sequence[Route]
) -> Iterator[Finding]:
    """Each stage's request the renderer refuses, at the key that does it."""
    seen: set[tuple[str, tuple[str | int, ...] | None]] = set()
    for route in routes:
        kind = registry.kind_of(route.page) if route.page is not None else None
        if kind is None:
            continue
        for phase in [None, *(p.name for p in manifest.phases(doc))]:
            res = stageresources.resources_for(doc, phase, route.stage)
            refusal = kind.unsayable(res)
            if refusal is None:
                continue
            key = _culprit(res, kind.unsayable)
            at = source(doc, phase, route.stage, key)
            if (refusal.message, at) in seen:
                continue
            seen.add((refusal.message, at))
            line, col = loc.at(at) if at else (1, 1)
            fix = refusal.hint or UNSAYABLE_FIX.format(key=key, backend=route.backend)
            yield CODES["MAN018"].at(
                rel, line, col, stage=route.stage, backend=route.backend,
                problem=refusal.message, fix=fix,
            )  # fmt: skip


def _culprit(res: Resources, unsayable: Callable[[Resources], CampaignError | None]) -> str:
    """The resources key whose removal ends the refusal (the first such), else partition."""
    for field in dataclasses.fields(res):
        asked = getattr(res, field.name) is not None
        if asked and unsayable(dataclasses.replace(res, **{field.name: None})) is None:
            return field.name
    return "partition"


def _unnamables(
    rel: str,
    doc: Mapping[str, Any],
    loc: Locator,
    routes: Sequence[Route],
    campaign: str,
    targets: Sequence[manifest.Target],
) -> Iterator[Finding]:
    """Each job name the renderer refuses, once per backend (its first stage): a target
    submitted alone (``--targets``, a retry) is named by its id, an array of several by its
    phase or the manifest's stem (runner/plan.py)."""
    stem = PurePosixPath(rel).stem
    arrays = Counter(t.phase or stem for t in targets)  # the groups of several: arrays
    named = [(t.id, t.id_at, RENAME_ID) for t in targets]
    named += [
        (p.name, (*p.at, "name"), RENAME_PHASE) for p in manifest.phases(doc) if arrays[p.name] > 1
    ]
    named += [(stem, (), RENAME_FILE)] if arrays[stem] > 1 else []
    seen: set[tuple[str, tuple[str | int, ...]]] = set()
    for route in routes:
        kind = registry.kind_of(route.page) if route.page is not None else None
        if kind is None:
            continue
        for word, at, rename in named:
            refusal = kind.unnamable(job_name(campaign, word, route.stage))
            if refusal is None or (route.backend, at) in seen:
                continue
            seen.add((route.backend, at))
            line, col = loc.at(at) if at else (1, 1)
            fix = rename + (f" ({refusal.hint})" if refusal.hint else "")
            yield CODES["MAN018"].at(
                rel, line, col, stage=route.stage, backend=route.backend,
                problem=refusal.message, fix=fix,
            )  # fmt: skip
