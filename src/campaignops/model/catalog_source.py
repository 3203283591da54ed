"""The failure catalog as every reader sees it: the upstream file with the campaign's own merged over.

`failures.yaml` is template-owned (`campaign update` brings upstream corrections into it);
`failures.local.yaml` is the campaign's own, never touched by an update. At load, the files the
policy's ``failures`` globs find are merged in order, upstream first and ``*.local.yaml`` last:
a later entry with an id already seen replaces that entry in place (whole: a local entry is a
complete entry), a new id is appended, and a later file's top-level ``disable: [id, ...]``
removes earlier entries with those ids. Values of the wrong shape are passed on as they are:
judging them is POLICY's work, per file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.core import layout
from campaignops.core.errors import InputError
from campaignops.core.files import FileReader
from campaignops.model import policy as policy_mod

UPSTREAM_FILE = "failures.yaml"
LOCAL_FILE = "failures.local.yaml"
LOCAL_SUFFIXES = (".local.yaml", ".local.yml")
DISABLE = "disable"


@dataclass(frozen=True)
class Merged:
    """The merged catalog document (``{"version": 1, "failures": [...]}``) and, per entry id,
    the file its entry comes from; ``disabled`` maps each disabled id to the file saying so."""

    data: Mapping[str, Any]
    origin: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    disabled: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def entries(self) -> list[Any]:
        found = self.data.get("failures")
        return found if isinstance(found, list) else []


def is_local(rel: str) -> bool:
    return rel.endswith(LOCAL_SUFFIXES)


def ordered(rels: Iterable[str]) -> tuple[str, ...]:
    """Catalog files in merge order: upstream ones first, local ones last (each by path)."""
    return tuple(sorted(dict.fromkeys(rels), key=lambda rel: (is_local(rel), rel)))


def _id(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    value = item.get("id")
    return value.strip() if isinstance(value, str) and value.strip() else None


def merge(docs: Sequence[tuple[str, Any]]) -> Merged:
    """``docs`` (path, parsed YAML) merged in the given order; see the module docstring."""
    merged: list[Any] = []
    where: dict[str, int] = {}  # id → index in merged
    origin: dict[str, str] = {}
    disabled: dict[str, str] = {}
    version: Any = 1
    for rel, data in docs:
        if not isinstance(data, Mapping):
            continue
        version = data.get("version", version)
        listed = data.get(DISABLE)
        for entry_id in listed if isinstance(listed, list) else ():
            if isinstance(entry_id, str) and entry_id in where:
                merged[where.pop(entry_id)] = None
                origin.pop(entry_id, None)
                disabled[entry_id] = rel
        items = data.get("failures")
        seen_here: set[str] = set()
        for item in items if isinstance(items, list) else ():
            entry_id = _id(item)
            if entry_id is not None and entry_id in where and entry_id not in seen_here:
                merged[where[entry_id]] = item  # a later file overrides in place
                origin[entry_id] = rel
            elif entry_id is not None and entry_id not in where:
                where[entry_id] = len(merged)
                merged.append(item)
                origin[entry_id] = rel
            else:  # no id, or a duplicate within one file: kept for POLICY004 to report
                merged.append(item)
            if entry_id is not None:
                seen_here.add(entry_id)
                disabled.pop(entry_id, None)
    return Merged(
        data={"version": version, "failures": [m for m in merged if m is not None]},
        origin=MappingProxyType(origin),
        disabled=MappingProxyType(disabled),
    )


def unknown_disables(docs: Sequence[tuple[str, Any]]) -> list[tuple[str, int, str]]:
    """(file, index, id) of each ``disable`` id that no earlier file of ``docs`` defines: a
    typo there would leave the upstream entry on without a word."""
    known: set[str] = set()
    found: list[tuple[str, int, str]] = []
    for rel, data in docs:
        if not isinstance(data, Mapping):
            continue
        listed = data.get(DISABLE)
        for i, entry_id in enumerate(listed if isinstance(listed, list) else ()):
            if isinstance(entry_id, str) and entry_id not in known:
                found.append((rel, i, entry_id))
        items = data.get("failures")
        known.update(i for i in map(_id, items if isinstance(items, list) else ()) if i)
    return found


def files(reader: FileReader, globs: Sequence[str] | None = None) -> tuple[str, ...]:
    """The campaign's catalog files (the policy's ``failures`` globs), in merge order."""
    if globs is None:
        parsed = reader.read_yaml(layout.POLICY_FILE)
        policy = policy_mod.from_data(parsed[0] if parsed else None, found=True)
        globs = policy.globs.get(layout.FAILURES, ())
    if all(not set("*?[") & set(g) for g in globs):
        rels = [g for g in globs if reader.exists(g)]  # the usual case: no walk of the tree
    else:
        rels = [r for r in layout.walk(reader.root) if layout.matches(r, globs)]
    return ordered(rels)


def read(reader: FileReader, *, hint: str, globs: Sequence[str] | None = None) -> Merged:
    """The merged catalog of the campaign ``reader`` reads. A catalog file that cannot be read
    or is not valid YAML raises InputError naming it (``hint`` says what to do next)."""
    docs: list[tuple[str, Any]] = []
    for rel in files(reader, globs):
        got = reader.read_yaml(rel)
        if got is None:
            raise reader.problems.get(rel) or InputError(path=rel, message="unreadable", hint=hint)
        data, syntax = got
        if syntax is not None:
            raise InputError(
                path=rel,
                message=f"not valid YAML (line {syntax.line}, column {syntax.col}: "
                f"{syntax.problem})",
                hint=hint,
            )
        docs.append((rel, data))
    return merge(docs)


def load(root: Path, *, hint: str) -> Merged:
    return read(FileReader(root), hint=hint)
