"""A Review as JSON (the documented contract: docs/formats.md, "campaign review") and as the
Markdown comment a reviewer reads in twenty seconds: a headline of counts, then one table per
section that has something in it.

Every string that comes from the campaign (paths, ids, values, finding messages) is one inline
code span (mdsafe.code): no HTML, no links or autolinks, no mentions or references, no bidi
control, no table cell broken by a pipe, one line each. A pull request writes these strings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from campaignops.backends.charging import amount
from campaignops.core import mdsafe
from campaignops.gitops.review.run import Review
from campaignops.gitops.review.targets import Cost

MARKER = "<!-- campaign-review -->"
MAX_ROWS = 30  # per table: the JSON has every row
MAX_CELL = 300  # characters per cell
# GitHub refuses a comment body over 65,536 characters ("body is too long (maximum is 65536
# characters)", https://github.com/danger/danger/issues/424, verified 2026-11): the comment is
# cut below that at a line, with room for a publisher's own marker.
MAX_COMMENT = 60_000
TOO_LONG = (
    "\n… cut here: the review is longer than a comment may be (campaign review --format json)\n"
)
NONE = "—"


def to_json(review: Review) -> str:
    """Stable JSON: sorted keys, every list in a fixed order (the Review's)."""

    def rows(items: Iterable[Any]) -> list[dict[str, Any]]:
        out = []
        for item in items:
            data = dataclasses.asdict(item)
            if "id" in data and "manifest" in data:
                data["target"] = data.pop("id")
            out.append(data)
        return out

    data = {
        "base": {"ref": review.ref, "commit": review.base},
        "head": {"commit": review.head},
        "targets": {
            "added": rows(review.added),
            "removed": rows(review.removed),
            "changed": rows(review.changed),
        },
        "resmoke": rows(review.resmoke),
        "cost": {"before": rows(review.cost_before), "after": rows(review.cost_after)},
        "queues": rows(review.queues),
        "wrappers": rows(review.wrappers),
        "policy": rows(review.policy),
        "knowledge": {"facts": rows(review.facts), "entries": rows(review.entries)},
        "findings": {
            "introduced": [f.as_dict() for f in review.introduced],
            "fixed": [f.as_dict() for f in review.fixed],
        },
        "unread": dict(review.unread),
    }
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def md(text: object) -> str:
    """A user's string as inert Markdown on one line: an inline code span."""
    return mdsafe.code(text)


def _value(field: str, value: Any) -> str:
    if value is None:
        return NONE
    if field.startswith(("file ", "config ")):
        return "sha256 " + md(str(value).removeprefix("sha256:")[:12])
    if isinstance(value, str):
        return md(value)
    return md(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    # A comment has a size limit (GitHub's is 65,536): a cell is cut, the JSON keeps it whole.
    out += [
        "| " + " | ".join(mdsafe.cell(mdsafe.cut(c, MAX_CELL)) for c in r) + " |"
        for r in rows[:MAX_ROWS]
    ]
    if len(rows) > MAX_ROWS:
        out.append(f"\n… and {len(rows) - MAX_ROWS} more rows (campaign review --format json)")
    return out


def _where(manifest: str, target: str, phase: str | None) -> list[str]:
    return [md(manifest), md(target) + (f" ({md(phase)})" if phase else "")]


def _hours(cost: Cost | None) -> str:
    if cost is None:
        return NONE
    parts = []
    if cost.node_hours is None:
        parts.append("no time limit")
    else:
        parts.append(amount(cost.node_hours, "node-hours"))
        if cost.gpu_hours:
            parts.append(amount(cost.gpu_hours, "gpu-hours"))
    if cost.charged is not None and cost.unit:
        parts.append("charged " + amount(cost.charged, cost.unit))
    return _n(cost.tasks, "task") + ", " + ", ".join(parts)


def _cost_rows(review: Review) -> list[list[str]]:
    before = {(c.manifest, c.stage): c for c in review.cost_before}
    after = {(c.manifest, c.stage): c for c in review.cost_after}
    rows = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a is not None and b is not None and a == b:
            continue
        backend = (b or a).backend if (b or a) else NONE  # type: ignore[union-attr]
        rows.append([md(key[0]), key[1], md(backend), _hours(a), _hours(b)])
    return rows


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _headline(review: Review, cost_rows: int) -> str:
    parts = [
        f"targets: {len(review.added)} added, {len(review.removed)} removed, "
        f"{len(review.changed)} changed",
        f"{len(review.resmoke)} to re-smoke",
    ]
    appended = sum(len(q.appended) for q in review.queues)
    if appended:
        parts.append(_n(appended, "queue line") + " appended")
    if cost_rows:
        parts.append("cost changed in " + _n(cost_rows, "manifest stage"))
    parts.append(f"findings: {len(review.introduced)} introduced, {len(review.fixed)} fixed")
    return "**" + " · ".join(parts) + "**"


# One section of the comment: its title, its table's header and rows; shown when ``shown``.
_Section = tuple[str, list[str], list[list[str]], bool]


def _target_sections(review: Review) -> list[_Section]:
    rows = [[*_where(t.manifest, t.id, t.phase), "added"] for t in review.added]
    rows += [[*_where(t.manifest, t.id, t.phase), "removed"] for t in review.removed]
    rows += [
        [
            *_where(t.manifest, t.id, t.phase),
            "; ".join(
                f"{md(c.field)}: {_value(c.field, c.before)} → {_value(c.field, c.after)}"
                for c in t.changes
            ),
        ]
        for t in review.changed
    ]
    resmoke = [
        [*_where(r.manifest, r.id, r.phase), ", ".join(md(b) for b in r.because)]
        for r in review.resmoke
    ]
    return [
        ("Targets", ["manifest", "target", "change"], rows, bool(rows)),
        (
            "Need a new smoke (fingerprint changed)",
            ["manifest", "target", "because"],
            resmoke,
            bool(review.resmoke),
        ),
    ]


def _file_sections(review: Review) -> list[_Section]:
    queues = [
        [md(q.path), str(line.line), "appended", md(line.text)]
        for q in review.queues
        for line in q.appended
    ]
    queues += [
        [md(q.path), str(e.line), "**not an append**", md(e.text)]
        for q in review.queues
        for e in q.edits
    ]
    wrappers = [
        [md(w.path), w.change, md(w.previous) if w.previous else NONE] for w in review.wrappers
    ]
    policy = [[md(p.key), _value(p.key, p.before), _value(p.key, p.after)] for p in review.policy]
    facts = [[md(f.path), str(f.line), f.change, md(f.text)] for f in review.facts]
    facts += [
        [
            md(e.path),
            md(e.id),
            e.change,
            f"verified {_value('', e.verified_before)} → {_value('', e.verified_after)}",
        ]
        for e in review.entries
    ]
    return [
        ("Queues", ["file", "line", "change", "text"], queues, bool(review.queues)),
        ("Wrappers", ["wrapper", "change", "previous version"], wrappers, bool(review.wrappers)),
        ("Policy (campaign.yaml)", ["setting", "before", "after"], policy, bool(review.policy)),
        (
            "Knowledge",
            ["file", "line / entry", "change", "fact"],
            facts,
            bool(review.facts or review.entries),
        ),
    ]


def _finding_sections(review: Review) -> list[_Section]:
    sections: list[_Section] = [
        (
            title,
            ["where", "id", "message"],
            [[md(f"{f.path}:{f.line}"), f.id, md(f.message)] for f in found],
            bool(found),
        )
        for title, found in (
            ("Findings introduced", review.introduced),
            ("Findings fixed", review.fixed),
        )
    ]
    unread = [[md(path), md(why)] for path, why in review.unread.items()]
    sections.append(("Manifests not read at HEAD", ["manifest", "why"], unread, bool(unread)))
    return sections


def markdown(review: Review) -> str:
    cost_rows = _cost_rows(review)
    out = [
        MARKER,
        f"### campaign review: {md(review.ref)} ({review.base[:12]}) → HEAD ({review.head[:12]})",
        "",
        _headline(review, len(cost_rows)),
    ]
    cost: _Section = (
        "Cost at the time limits (every target once)",
        ["manifest", "stage", "backend", "before", "after"],
        cost_rows,
        bool(cost_rows),
    )
    sections = [
        *_target_sections(review),
        cost,
        *_file_sections(review),
        *_finding_sections(review),
    ]
    for title, header, rows, shown in sections:
        if shown:
            out.extend(["", f"#### {title}", "", *_table(header, rows)])
    text = "\n".join(out) + "\n"
    if len(text) <= MAX_COMMENT:
        return text
    return text[: text.rindex("\n", 0, MAX_COMMENT - len(TOO_LONG)) + 1] + TOO_LONG
