"""`campaign review`: what a change does to the campaign, read semantically from two trees.

``compare(base=…, head=…)`` takes two directories holding the campaign as committed at each
side (review_tree.py writes them) and runs the campaign's own readers on each: manifests
expanded to targets with their fingerprints and costs (review_targets.py), queue lines, wrapper
versions, policy keys and knowledge (review_files.py), and `campaign check`'s findings. The
answer is a ``Review``; review_render.py prints it as a pull-request comment or JSON.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaignops.checks import context, registry
from campaignops.checks import queues as queue_checks
from campaignops.checks import wrappers as wrapper_checks
from campaignops.checks.finding import Finding
from campaignops.core import layout
from campaignops.core.files import FileReader
from campaignops.gitops.review.files import (
    EntryChange,
    FactChange,
    PolicyChange,
    QueueChange,
    WrapperChange,
    entry_changes,
    fact_changes,
    policy_changes,
    queue_change,
    wrapper_changes,
)
from campaignops.gitops.review.targets import Cost, Side, TargetView, read_side
from campaignops.model import lockfile
from campaignops.model import policy as policy_mod
from campaignops.model.fingerprint import PLACEMENT_KEYS


@dataclass(frozen=True)
class TargetRef:
    manifest: str
    id: str
    phase: str | None


@dataclass(frozen=True)
class FieldChange:
    field: str  # args.epochs, cmd, resources.production.time, file configs/x.yaml …
    before: Any
    after: Any


@dataclass(frozen=True)
class TargetChange:
    manifest: str
    id: str
    phase: str | None
    changes: tuple[FieldChange, ...]


@dataclass(frozen=True)
class Resmoke:
    """A target on both sides whose fingerprint changed: no earlier smoke stands for it."""

    manifest: str
    id: str
    phase: str | None
    because: tuple[str, ...]  # the changed fields that are configuration


@dataclass(frozen=True)
class Review:
    base: str  # the commits compared
    head: str
    ref: str = ""  # the base as the user named it (--base)
    added: tuple[TargetRef, ...] = ()
    removed: tuple[TargetRef, ...] = ()
    changed: tuple[TargetChange, ...] = ()
    resmoke: tuple[Resmoke, ...] = ()
    cost_before: tuple[Cost, ...] = ()
    cost_after: tuple[Cost, ...] = ()
    queues: tuple[QueueChange, ...] = ()
    wrappers: tuple[WrapperChange, ...] = ()
    policy: tuple[PolicyChange, ...] = ()
    facts: tuple[FactChange, ...] = ()
    entries: tuple[EntryChange, ...] = ()
    introduced: tuple[Finding, ...] = ()
    fixed: tuple[Finding, ...] = ()
    unread: Mapping[str, str] = field(default_factory=dict)  # head's manifests not expanded


@dataclass(frozen=True)
class _Tree:
    root: Path
    policy: policy_mod.Policy
    files: tuple[str, ...]
    reader: FileReader

    def of(self, kind: str) -> tuple[str, ...]:
        return tuple(r for r in self.files if kind in layout.kinds_of(r, self.policy.globs))

    def text(self, rel: str) -> str | None:
        return self.reader.read_text(rel) if rel in self.files else None

    def yaml(self, rel: str) -> Any:
        parsed = self.reader.read_yaml(rel) if rel in self.files else None
        return parsed[0] if parsed and parsed[1] is None else None


def _tree(root: Path) -> _Tree:
    reader = FileReader(root)
    parsed = reader.read_yaml(layout.POLICY_FILE)
    policy = policy_mod.from_data(parsed[0] if parsed else None, found=True)
    return _Tree(root=root, policy=policy, files=tuple(layout.walk(root)), reader=reader)


def _flat_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` and ``resources.<stage>`` split per key: a reviewer reads one value changing."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, Mapping) and (name == "args" or name.startswith("resources.")):
            for key, inner in value.items():
                out[f"{name}.{key}"] = inner
        else:
            out[name] = value
    return out


def _field_changes(a: TargetView, b: TargetView) -> tuple[FieldChange, ...]:
    fa, fb = _flat_fields(a.fields), _flat_fields(b.fields)
    return tuple(
        FieldChange(name, fa.get(name), fb.get(name))
        for name in sorted(set(fa) | set(fb))
        if fa.get(name) != fb.get(name)
    )


def _configuration(name: str, run_length: set[str]) -> bool:
    """A field the fingerprint hashes: not where or how long a job runs, nor its run length,
    nor what the smoke asks for (the smoke's own settings; the fingerprint is production's)."""
    if name.startswith("resources.smoke."):
        return False
    if name.startswith("resources."):
        return name.rsplit(".", 1)[-1] not in PLACEMENT_KEYS
    return not (name.startswith("args.") and name.removeprefix("args.") in run_length)


def _targets(before: Side, after: Side) -> dict[str, tuple[Any, ...]]:
    def ref(view: TargetView) -> TargetRef:
        return TargetRef(view.manifest, view.id, view.phase)

    changed: list[TargetChange] = []
    resmoke: list[Resmoke] = []
    for key in sorted(set(before.targets) & set(after.targets)):
        a, b = before.targets[key], after.targets[key]
        diff = _field_changes(a, b)
        if diff:
            changed.append(TargetChange(b.manifest, b.id, b.phase, diff))
        if a.fingerprint != b.fingerprint:
            masked = {*a.run_length, *b.run_length}
            because = tuple(c.field for c in diff if _configuration(c.field, masked))
            resmoke.append(Resmoke(b.manifest, b.id, b.phase, because or ("manifest settings",)))
    return {
        "added": tuple(
            ref(after.targets[k]) for k in sorted(set(after.targets) - set(before.targets))
        ),
        # A manifest HEAD cannot expand (invalid, its queue unreadable, too large) lost no
        # target that anyone can tell: its targets are unknown, not removed ("Manifests not read").
        "removed": tuple(
            ref(before.targets[k])
            for k in sorted(set(before.targets) - set(after.targets))
            if k[0] not in after.unread
        ),
        "changed": tuple(changed),
        "resmoke": tuple(resmoke),
    }


def _pairs(a: _Tree, b: _Tree, kind: str) -> list[str]:
    return sorted(set(a.of(kind)) | set(b.of(kind)))


def _findings(tree: _Tree, today: dt.date) -> set[Finding]:
    ctx = context.build(cwd=tree.root, today=today)
    return set(registry.run(ctx).findings)


def _base_rule_findings(
    a: _Tree, b: _Tree, queues: Sequence[QueueChange], base: str
) -> set[Finding]:
    """The append-only rules `campaign check --base` applies (queue lines, lock entries)."""
    out: set[Finding] = set()
    for change in queues:
        for edit in change.edits:
            out.add(
                queue_checks.CODES["QUEUE004"].at(
                    change.path, edit.line, 1, change=edit.text, base=base, file=change.path
                )
            )
    old, new = a.text(layout.LOCK_FILE), b.text(layout.LOCK_FILE)
    if old is not None and new is not None:
        was = [line for _, line in lockfile.entry_lines(old)]
        now = lockfile.entry_lines(new)
        for what, entry, index in wrapper_checks.base_changes(was, [line for _, line in now]):
            out.add(
                wrapper_checks.CODES["WRAP004"].at(
                    layout.LOCK_FILE,
                    now[index][0] if index is not None else 1,
                    entry=entry,
                    change=what,
                    base=base,
                )
            )
    return out


def _key(f: Finding) -> tuple[str, str, str]:
    return (f.id, f.path, f.message)


def compare(
    *, base: Path, head: Path, today: dt.date, base_name: str, commits: tuple[str, str] = ("", "")
) -> Review:
    """The review of the change from ``base``'s tree to ``head``'s (each a campaign root)."""
    a, b = _tree(base), _tree(head)
    before = read_side(a.root, a.policy, a.files)
    after = read_side(b.root, b.policy, b.files)
    targets = _targets(before, after)

    queues = [
        change
        for rel in _pairs(a, b, layout.QUEUE)
        if (change := queue_change(rel, a.text(rel), b.text(rel))) is not None
    ]

    def blobs(tree: _Tree) -> dict[str, bytes]:
        return {
            rel: data
            for rel in tree.of(layout.WRAPPER)
            if (data := tree.reader.read_bytes(rel)) is not None
        }

    facts = [
        change
        for rel in _pairs(a, b, layout.BACKEND)
        for change in fact_changes(rel, a.text(rel), b.text(rel))
    ]
    entries = [
        change
        for rel in _pairs(a, b, layout.FAILURES)
        for change in entry_changes(rel, a.yaml(rel), b.yaml(rel))
    ]
    found_a = _findings(a, today)
    found_b = _findings(b, today) | _base_rule_findings(a, b, queues, base_name)
    keys_a, keys_b = {_key(f) for f in found_a}, {_key(f) for f in found_b}
    return Review(
        base=commits[0],
        head=commits[1],
        ref=base_name,
        added=targets["added"],
        removed=targets["removed"],
        changed=targets["changed"],
        resmoke=targets["resmoke"],
        cost_before=before.costs,
        cost_after=after.costs,
        queues=tuple(queues),
        wrappers=tuple(wrapper_changes(blobs(a), blobs(b))),
        policy=tuple(policy_changes(a.yaml(layout.POLICY_FILE), b.yaml(layout.POLICY_FILE))),
        facts=tuple(facts),
        entries=tuple(entries),
        introduced=tuple(sorted(f for f in found_b if _key(f) not in keys_a)),
        fixed=tuple(sorted(f for f in found_a if _key(f) not in keys_b)),
        unread=dict(sorted(after.unread.items())),
    )
