"""Formatting a Report for people (text), GitHub Actions (annotations) and tools (JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from campaignops.checks.finding import Finding
from campaignops.checks.registry import Report
from campaignops.core.safetext import annotation, one_line, plain_line

PathMap = Callable[[str], str]


def _text(report: Report, display: PathMap) -> str:
    lines: list[str] = []
    for f in report.findings:
        # File names and messages quote users' text: one finding stays one line (safetext).
        lines.append(plain_line(f"{display(f.path)}:{f.line}:{f.col}: {f.id} {f.message}"))
        lines.append(f"  hint: {one_line(f.hint)}")
    if report.findings:
        files = len({f.path for f in report.findings})
        noun = "finding" if len(report.findings) == 1 else "findings"
        lines.append(f"{len(report.findings)} {noun} in {files} file{'s' if files > 1 else ''}.")
    return "\n".join(lines)


def _github_line(f: Finding, display: PathMap) -> str:
    props = {"file": display(f.path), "line": str(f.line), "col": str(f.col), "title": f.id}
    return annotation("error", f"{f.id} {f.message} (hint: {f.hint})", props)


def _github(report: Report, display: PathMap) -> str:
    return "\n".join(_github_line(f, display) for f in report.findings)


def to_json(report: Report, display: PathMap) -> dict[str, Any]:
    """``{"findings": [...], "errors": [...]}`` (docs/formats.md)."""
    return {
        "findings": [{**f.as_dict(), "path": display(f.path)} for f in report.findings],
        "errors": [
            {"path": display(p.path), "message": p.message, "hint": p.hint} for p in report.problems
        ],
    }


def _json(report: Report, display: PathMap) -> str:
    return json.dumps(to_json(report, display), indent=2)


FORMATTERS: Mapping[str, Callable[[Report, PathMap], str]] = {
    "text": _text,
    "github": _github,
    "json": _json,
}


def render(report: Report, *, fmt: str, display: PathMap) -> str:
    return FORMATTERS[fmt](report, display)
