"""Formatting an Audit: text for a terminal, JSON for tools, Markdown for the issue the scheduled
workflow opens and updates (found again by its hidden marker line)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from itertools import groupby
from typing import Any

from campaignops.checks.finding import Finding
from campaignops.core import mdsafe
from campaignops.core.safetext import one_line, plain_line
from campaignops.gitops.upkeep.run import Audit, DueStamp

# The first line of the issue body: how the workflow finds its own issue among the others.
MARKER = "<!-- campaign-audit -->"
# GitHub refuses an issue body over 65,536 characters (422 "body is too long (maximum is 65536
# characters)", github.com/PyGithub/PyGithub/issues/1906); the list is cut well before that.
MAX_MARKDOWN = 60_000

PathMap = Callable[[str], str]


def to_json(audit: Audit, display: PathMap = str) -> dict[str, Any]:
    """``{"stale": [...], "due": [...], "standing": [...]}`` (docs/formats.md)."""
    return {
        "stale": [{**d.as_dict(), "path": display(d.path)} for d in audit.stale],
        "due": [{**d.as_dict(), "path": display(d.path)} for d in audit.due],
        "standing": [{**f.as_dict(), "path": display(f.path)} for f in audit.standing],
    }


def json_text(audit: Audit, display: PathMap = str) -> str:
    return json.dumps(to_json(audit, display), indent=2, ensure_ascii=False)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _summary(audit: Audit) -> str:
    return (
        f"{_plural(len(audit.stale), 'stale stamp')}, "
        f"{_plural(len(audit.due), 'stamp')} due within {audit.due_within_days} days, "
        f"{_plural(len(audit.standing), 'standing finding')}"
    )


def _text_stamp(d: DueStamp, display: PathMap, *, due: bool) -> str:
    source = d.source or "no source named"
    when = f"stale from {d.expires.isoformat()}; " if due else ""
    return plain_line(f"{display(d.path)}:{d.line}: {d.stamp}  ({when}re-check: {source})")


def _text_finding(f: Finding, display: PathMap) -> list[str]:
    return [
        plain_line(f"{display(f.path)}:{f.line}:{f.col}: {f.id} {f.message}"),
        f"  hint: {one_line(f.hint)}",
    ]


def text(audit: Audit, display: PathMap = str) -> str:
    """Sections (stale, due, standing), one line per stamp, then a summary line."""
    lines: list[str] = []
    if audit.stale:
        lines.append(f"stale on {audit.today.isoformat()} ({_limit(audit)}):")
        lines += [_text_stamp(d, display, due=False) for d in audit.stale]
    if audit.due:
        lines.append(f"due by {audit.horizon.isoformat()}:")
        lines += [_text_stamp(d, display, due=True) for d in audit.due]
    if audit.standing:
        lines.append("standing checks:")
        for f in audit.standing:
            lines += _text_finding(f, display)
    lines.append(_summary(audit) + ".")
    return "\n".join(lines)


def _limit(audit: Audit) -> str:
    return f"policy: stale after {audit.stale_after_months} months"


# Markdown: users' text never opens a tag, a link or a heading of its own.
_URL = re.compile(r"https?://[^\s<>()\[\]`]+[^\s<>()\[\]`.,;:!?'\"]")
_HOSTPATH = re.compile(
    r"(?<![\w/.@-])(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}/[^\s<>()\[\]`]*[^\s<>()\[\]`.,;:!?'\"]"
)
_SPECIAL = re.compile(r"([\\`*_\[\]<>#|!~])")


def _escape(value: str) -> str:
    return _SPECIAL.sub(r"\\\1", one_line(value))


def link_sources(source: str) -> str:
    """``source`` as Markdown: URLs as autolinks, ``host/path`` forms linked over https, the
    rest escaped text."""
    out: list[str] = []
    pos = 0
    pattern = re.compile(f"{_URL.pattern}|{_HOSTPATH.pattern}")
    for m in pattern.finditer(source):
        out.append(_escape(source[pos : m.start()]))
        found = m.group(0)
        if found.startswith(("http://", "https://")):
            out.append(f"<{found}>")  # an autolink: the pattern admits no space, < or >
        else:
            out.append(f"[{_escape(found)}](https://{found})")
        pos = m.end()
    out.append(_escape(source[pos:]))
    return "".join(out)


def _md_stamp(d: DueStamp, *, due: bool) -> str:
    source = f"re-check {link_sources(d.source)}" if d.source else "no source named: find one"
    when = f" (stale from {d.expires.isoformat()})" if due else ""
    return f"- line {d.line}: {mdsafe.code(d.stamp)}{when}: {source}"


def _md_stamps(stamps: Iterable[DueStamp], display: PathMap, *, due: bool) -> list[str]:
    lines: list[str] = []
    for path, group in groupby(stamps, key=lambda d: d.path):
        lines += ["", f"**{mdsafe.code(display(path))}**", ""]
        lines += [_md_stamp(d, due=due) for d in group]
    return lines


def markdown(audit: Audit, display: PathMap = str) -> str:
    """The issue body: the marker, a summary, then stamps grouped per file and the standing
    findings. Short: one line per stamp or finding."""
    month = f"{audit.today:%Y-%m}"
    lines = [MARKER, f"## Campaign audit, {audit.today.isoformat()}", "", f"{_summary(audit)}."]
    if not (audit.stale or audit.due or audit.standing):
        lines += ["", "Nothing to do: every stamp is fresh and every standing check passes."]
        return "\n".join(lines)
    if audit.stale or audit.due:
        lines += [
            "",
            "Re-check each fact against its source, then update its stamp to "
            f"{mdsafe.code('verified ' + month)} (or the month you checked it; {_limit(audit)}).",
        ]
    if audit.stale:
        lines += ["", "### Stale now"]
        lines += _md_stamps(audit.stale, display, due=False)
    if audit.due:
        lines += ["", f"### Due by {audit.horizon.isoformat()}"]
        lines += _md_stamps(audit.due, display, due=True)
    if audit.standing:
        lines += ["", "### Standing checks", ""]
        for f in audit.standing:
            where = mdsafe.code(f"{display(f.path)}:{f.line}")
            lines.append(f"- {where} **{f.id}** {_escape(f.message)}. {_escape(f.hint)}")
    return _cut(lines)


def _cut(lines: list[str]) -> str:
    """The lines, or as many as fit in MAX_MARKDOWN with a last line saying how many more."""
    size = sum(len(line) + 1 for line in lines)
    if size <= MAX_MARKDOWN:
        return "\n".join(lines)
    kept: list[str] = []
    room = MAX_MARKDOWN - 200  # the closing line's share
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        kept.append(line)
    left = sum(1 for line in lines[len(kept) :] if line.startswith("- "))
    kept += ["", f"… and {left} more: run `campaign audit` in the campaign for the whole list."]
    return "\n".join(kept)
