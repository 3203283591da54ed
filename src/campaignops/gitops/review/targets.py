"""One side of a review, read the way the runner reads it: each manifest's targets expanded
(queue cells included), what each target is made of, its fingerprint, and what each stage of
each manifest would cost.

The runner's own functions do the reading (manifest expansion, runner.inputs for queue cells,
named files and fingerprints, runner.plan for resources, runner.charging for the price), so a
review says what `campaign submit` would do with that commit, not what a text diff suggests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaignops.backends import charging
from campaignops.backends import registry as backends
from campaignops.core import layout, schema
from campaignops.core.errors import CampaignError
from campaignops.core.files import FileReader
from campaignops.model import accelerator, fingerprint, manifest, walltime
from campaignops.model import policy as policy_mod
from campaignops.runner import gitfacts, inputs, plan

# The stages a review prices: `single` is one target of production, priced by production.
PRICED = ("smoke", "production")
# The stage whose fingerprint a smoke must match (the smoke-first gate's production side).
JUDGED = "production"


@dataclass(frozen=True)
class TargetView:
    """What one target is, as the runner would run it: the fields a reviewer compares."""

    manifest: str
    id: str
    phase: str | None
    fields: Mapping[str, Any]  # name → value (args, cmd, output, resources.<stage>, files …)
    fingerprint: str
    run_length: tuple[str, ...] = ()  # the args a smoke shortens: not in the fingerprint


@dataclass(frozen=True)
class Cost:
    """The most one stage of one manifest may use: every target once, at its time limit."""

    manifest: str
    stage: str
    backend: str
    tasks: int
    node_hours: float | None  # None: some job has no time limit to count
    gpu_hours: float | None
    charged: float | None = None  # in ``unit``, where the backend page has a charging block
    unit: str | None = None


@dataclass(frozen=True)
class Side:
    """Everything the target sections need from one commit."""

    targets: Mapping[tuple[str, str], TargetView] = field(default_factory=dict)
    costs: tuple[Cost, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)  # manifest → why it was not read


def _page(root: Path, name: str) -> Mapping[str, Any] | None:
    try:
        return backends.page(root, name)
    except CampaignError:
        return None


def _rounded(value: float | None) -> float | None:
    """Four decimals: JSON stays the same across platforms' float sums, and 0.36 s shows."""
    return None if value is None else round(value, 4)


def _hours(value: float | None, add: float | None) -> float | None:
    return None if value is None or add is None else value + add


def _cost(
    rel: str,
    doc: Mapping[str, Any],
    every: list[manifest.Target],
    stage: str,
    root: Path,
    policy: policy_mod.Policy,
) -> Cost:
    backend = policy_mod.backend_for(policy, stage, doc)
    page = _page(root, backend)
    model = charging.charging(page)
    groups: dict[str | None, int] = {}
    for target in every:
        groups[target.phase] = groups.get(target.phase, 0) + 1
    node_h: float | None = 0.0
    gpu_h: float | None = 0.0
    charged: float | None = 0.0 if model else None
    for phase, tasks in groups.items():
        res = plan.resources_for(doc, phase, stage)
        try:
            time_s = walltime.parse(res.time) if res.time is not None else None
        except CampaignError:
            time_s = None
        hours = None if time_s is None else tasks * time_s / 3600
        nodes = res.nodes or 1
        node_h = _hours(node_h, None if hours is None else hours * nodes)
        gpu_h = _hours(gpu_h, None if hours is None else hours * nodes * (res.gpus or 0))
        if model is not None:
            charged = _hours(charged, charging.estimate(res, tasks, time_s, page))
    return Cost(
        manifest=rel,
        stage=stage,
        backend=backend,
        tasks=len(every),
        node_hours=_rounded(node_h),
        gpu_hours=_rounded(gpu_h),
        charged=_rounded(charged),
        unit=model.unit if model else None,
    )


def _fields(
    target: manifest.Target,
    doc: Mapping[str, Any],
    files: Mapping[str, str],
    config: str | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "args": dict(target.args),
        "cmd": target.cmd if target.cmd is not None else doc.get("default_cmd"),
        "output": target.output,
    }
    for stage in PRICED:
        res = plan.resources_for(doc, target.phase, stage)
        out[f"resources.{stage}"] = {k: v for k, v in vars(res).items() if v is not None}
    for rel, digest in files.items():
        out[f"file {rel}"] = digest
    if config is not None and f"file {target.args.get('cfg')}" not in out:
        out[f"config {target.args.get('cfg')}"] = config
    return out


def _blobs(root: Path, tree: tuple[str, ...]) -> Callable[[], Mapping[str, str]]:
    """The commit's files' object ids, from the bytes review_tree wrote (the ids `git ls-tree`
    gives at submit, in a SHA-1 repository), hashed once and only when a command reaches a
    directory: what model/headtree.py digests."""
    memo: list[dict[str, str]] = []

    def ids() -> Mapping[str, str]:
        if not memo:
            found: dict[str, str] = {}
            for rel in tree:
                path = root / rel
                try:
                    data = os.fsencode(path.readlink()) if path.is_symlink() else path.read_bytes()
                except OSError:
                    continue
                found[rel] = gitfacts.blob_id(data, sha256=False)
            memo.append(found)
        return memo[0]

    return ids


def _manifest(
    root: Path,
    rel: str,
    doc: Mapping[str, Any],
    policy: policy_mod.Policy,
    blobs: Callable[[], Mapping[str, str]],
) -> tuple[list[TargetView], list[Cost]]:
    cells: tuple[Any, ...] = ()
    configs: dict[str, str] = {}
    if isinstance(doc.get("queue"), str):
        cells, configs = inputs.queue_cells(root, doc["queue"])
    # Sized before expansion: a grid of a million cells must not be built to be refused.
    size = sum(len(b.jobs) + manifest.grid_size(b.grid) for b in manifest.blocks(doc))
    if size + len(cells) > manifest.MAX_TARGETS:
        raise ValueError(f"expands to more than {manifest.MAX_TARGETS} targets")
    every = list(manifest.targets(doc, cells))
    backend = policy_mod.backend_for(policy, JUDGED, doc)
    page = _page(root, backend)
    hardware = {t.id: accelerator.of(plan.resources_for(doc, t.phase, JUDGED), page) for t in every}
    files = inputs.named_digests(doc, every, root, manifest_path=rel, blobs=blobs)
    prints = fingerprint.fingerprints(doc, cells, configs=configs, hardware=hardware, files=files)
    views = [
        TargetView(
            manifest=rel,
            id=t.id,
            phase=t.phase,
            fields=_fields(
                t,
                doc,
                files.get(t.id, {}),
                configs.get(str(t.args.get("cfg"))) if t.positional else None,
            ),
            fingerprint=prints[t.id],
            run_length=fingerprint.run_length_keys(doc),
        )
        for t in every
    ]
    return views, [_cost(rel, doc, every, stage, root, policy) for stage in PRICED]


def read_side(root: Path, policy: policy_mod.Policy, tree: tuple[str, ...]) -> Side:
    """The targets and costs of every manifest in ``tree`` (the commit's files under ``root``).
    A manifest the runner would refuse (invalid, or its queue unreadable) has no targets here;
    ``unread`` says why, and the findings section carries `campaign check`'s own words."""
    reader = FileReader(root)
    targets: dict[tuple[str, str], TargetView] = {}
    costs: list[Cost] = []
    unread: dict[str, str] = {}
    blobs = _blobs(root, tree)
    for rel in tree:
        if layout.MANIFEST not in layout.kinds_of(rel, policy.globs):
            continue
        parsed = reader.read_yaml(rel)
        doc = parsed[0] if parsed and parsed[1] is None else None
        if not isinstance(doc, Mapping) or next(schema.validate(schema.MANIFEST, doc), None):
            unread[rel] = "not a valid manifest (campaign check --select MAN says why)"
            continue
        try:
            views, priced = _manifest(root, rel, doc, policy, blobs)
        except (CampaignError, ValueError, KeyError, TypeError) as exc:
            unread[rel] = exc.message if isinstance(exc, CampaignError) else str(exc)
            continue
        for view in views:
            targets[(rel, view.id)] = view
        costs.extend(priced)
    return Side(targets=targets, costs=tuple(costs), unread=unread)
