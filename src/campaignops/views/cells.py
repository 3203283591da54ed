"""The pieces every view's table is made of: one cell, a table, a duration, an empty table's
row, and the escape that lets a view of any ledger string be written and printed.
"""

from __future__ import annotations

from collections.abc import Sequence

NONE = "—"


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (from a ledger string such as ``"\\ud800"``, which
    JSON allows and UTF-8 cannot hold) written as its escape ``\\ud800``, so a view of it can be
    written to a file and printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cell(value: object) -> str:
    """One table cell: on one line, pipes escaped, no raw HTML, '—' when empty."""
    if value is None or value == "" or value == []:
        return NONE
    text = " ".join(str(value).split())
    return text.replace("|", "\\|").replace("<", "&lt;") or NONE


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(row) + " |" for row in lines)


def empty(header: Sequence[str], message: str) -> list[list[str]]:
    return [[message] + [""] * (len(header) - 1)]


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d {h:02d}h"
