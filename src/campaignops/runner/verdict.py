"""A gate's verdict, and the wording every gate shares (lists of paths kept short)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

MAX_LISTED = 5


@dataclass(frozen=True)
class Verdict:
    gate: str
    passed: bool
    reason: str
    hint: str = ""
    override: str | None = None  # the reason that passed a tripped gate: record it


def listed(paths: Iterable[str]) -> str:
    items = sorted(paths)
    shown = ", ".join(items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def quoted(paths: Iterable[str]) -> str:
    return " ".join(shlex.quote(p) for p in sorted(paths))


def refuse(gate: str, reason: str, hint: str) -> Verdict:
    return Verdict(gate=gate, passed=False, reason=reason, hint=hint)


def ok(gate: str, reason: str) -> Verdict:
    return Verdict(gate=gate, passed=True, reason=reason)
