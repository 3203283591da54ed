"""The file-level sections of a review: queue lines, wrapper versions, policy keys, and the
knowledge the campaign keeps (backend-page facts, failure-catalog entries).

Each function compares two texts (or parsed documents) of one file, base and head; None stands
for "absent on that side". Pure: the caller reads the files.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from campaignops.model import lockfile, queuefile, stamps

ADDED, CHANGED, REMOVED, REVERIFIED = "added", "changed", "removed", "re-verified"


@dataclass(frozen=True)
class Line:
    line: int  # 1-based, in the head's text
    text: str


@dataclass(frozen=True)
class QueueChange:
    """A queue file's change: the cells appended (what a PR to a running queue should be), and
    the edits that are not appends (QUEUE004 findings: a resumed queue would skip wrong lines)."""

    path: str
    appended: tuple[Line, ...]
    edits: tuple[Line, ...] = ()  # line (in head) and what happened there


@dataclass(frozen=True)
class WrapperChange:
    path: str
    change: str  # added | changed | removed
    previous: str | None = None  # the version before it, for a new version of a wrapper


@dataclass(frozen=True)
class PolicyChange:
    key: str  # dotted: budgets.cloud_usd, stages.require_smoke, backends
    before: Any
    after: Any


@dataclass(frozen=True)
class FactChange:
    """A stamped line of a backend page: ``text`` is head's line (base's when removed)."""

    path: str
    line: int
    change: str  # added | changed | removed | re-verified
    text: str
    before: str | None = None  # base's line, for a changed one
    stamp_before: str | None = None
    stamp_after: str | None = None


@dataclass(frozen=True)
class EntryChange:
    """A failure-catalog entry, by id."""

    path: str
    id: str
    change: str
    verified_before: str | None = None
    verified_after: str | None = None


def queue_change(path: str, old: str | None, new: str | None) -> QueueChange | None:
    if new is None:
        return None if old is None else QueueChange(path, (), (Line(1, "queue file was deleted"),))
    after = queuefile.lines(new)
    if old is None:
        start = 0
        edits: tuple[Line, ...] = ()
    else:
        before = queuefile.lines(old)
        edit = queuefile.first_edit(old, new)
        edits = (Line(edit.line, edit.change),) if edit else ()
        start = len(before)
    appended = tuple(
        Line(i + 1, text)
        for i, text in enumerate(after[start:], start)
        if not queuefile.is_blank(text) and not queuefile.is_comment(text)
    )
    if not appended and not edits:
        return None
    return QueueChange(path, appended, edits)


def wrapper_changes(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> list[WrapperChange]:
    """Versioned wrappers (``name.vN.ext``) added, edited in place or removed."""

    def stem(rel: str) -> tuple[str, str, int] | None:
        m = lockfile.VERSIONED.match(rel)
        return (m["name"], m["ext"], int(m["n"])) if m else None

    out: list[WrapperChange] = []
    for rel in sorted(set(before) | set(after)):
        key = stem(rel)
        if key is None:
            continue
        if rel not in before:
            older = [
                (k[2], r) for r in before if (k := stem(r)) and k[:2] == key[:2] and k[2] < key[2]
            ]
            out.append(WrapperChange(rel, ADDED, max(older)[1] if older else None))
        elif rel not in after:
            out.append(WrapperChange(rel, REMOVED))
        elif before[rel] != after[rel]:
            out.append(WrapperChange(rel, CHANGED))
    return out


def _flat(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, Mapping) and (data or not prefix):
        for key in sorted(data, key=str):
            yield from _flat(data[key], f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, data


def policy_changes(old: Any, new: Any) -> list[PolicyChange]:
    """campaign.yaml's settings that differ, by dotted key (a list compares as a whole)."""
    before = dict(_flat(old if isinstance(old, Mapping) else {}))
    after = dict(_flat(new if isinstance(new, Mapping) else {}))
    return [
        PolicyChange(key, before.get(key), after.get(key))
        for key in sorted(set(before) | set(after))
        if key and before.get(key) != after.get(key)
    ]


def _stamped(text: str) -> dict[int, stamps.Stamp]:
    return {s.line: s for s in stamps.markdown_stamps(text)}


def _unstamped(line: str, stamp: stamps.Stamp | None) -> str:
    """The fact without its stamp: a re-verified fact reads the same once the stamp is gone."""
    if stamp is None:
        return line.strip()
    head = line[: stamp.col - 1].rstrip(" (—-–,;")
    return " ".join(head.split())


def fact_changes(path: str, old: str | None, new: str | None) -> list[FactChange]:
    """Stamped lines added, changed, removed or re-verified (same fact, new stamp)."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    sa, sb = _stamped(old or ""), _stamped(new or "")
    out: list[FactChange] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            was = sa.get(i + 1) if i < i2 else None
            now = sb.get(j + 1) if j < j2 else None
            if was and now:
                same = _unstamped(a[i], was) == _unstamped(b[j], now)
                out.append(
                    FactChange(
                        path,
                        j + 1,
                        REVERIFIED if same else CHANGED,
                        b[j].strip(),
                        None if same else a[i].strip(),
                        was.raw,
                        now.raw,
                    )
                )
            elif now:
                out.append(FactChange(path, j + 1, ADDED, b[j].strip(), None, None, now.raw))
            elif was:
                out.append(FactChange(path, i + 1, REMOVED, a[i].strip(), None, was.raw, None))
    return out


def _entries(data: Any) -> dict[str, Mapping[str, Any]]:
    found = data.get("failures") if isinstance(data, Mapping) else None
    return {
        str(e["id"]): e
        for e in (found if isinstance(found, Sequence) and not isinstance(found, str) else ())
        if isinstance(e, Mapping) and isinstance(e.get("id"), str)
    }


def entry_changes(path: str, old: Any, new: Any) -> list[EntryChange]:
    """Catalog entries by id: added, removed, changed, or only their ``verified`` renewed."""
    a, b = _entries(old), _entries(new)
    out: list[EntryChange] = []
    for key in sorted(set(a) | set(b)):
        was, now = a.get(key), b.get(key)
        va = str(was.get("verified")) if was and was.get("verified") is not None else None
        vb = str(now.get("verified")) if now and now.get("verified") is not None else None
        if was is None:
            out.append(EntryChange(path, key, ADDED, None, vb))
        elif now is None:
            out.append(EntryChange(path, key, REMOVED, va, None))
        elif dict(was) != dict(now):
            rest_a = {k: v for k, v in was.items() if k != "verified"}
            rest_b = {k: v for k, v in now.items() if k != "verified"}
            out.append(EntryChange(path, key, REVERIFIED if rest_a == rest_b else CHANGED, va, vb))
    return out
