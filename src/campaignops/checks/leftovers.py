"""Merge leftovers (part of the EOL family, the checks on a file's raw text): conflict markers
and ``*.rej`` files.

`campaign update` (copier's 3-way merge) writes inline conflict markers where the campaign and
the template changed the same lines, or a ``.rej`` file with ``--conflict rej``; a git merge of
two branches writes the same markers. A file holding them is neither valid YAML nor a true page,
and a ``.rej`` file is an update half applied: both must be resolved before the commit. Only the
opening ``<<<<<<<`` line is looked for (a ``=======`` line is a Markdown heading underline).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding

CODES = (
    Code(
        id="EOL005",
        message="unresolved merge conflict at line {lineno} ({count} conflict(s) in the file)",
        hint="keep the right lines between '<<<<<<<' and '>>>>>>>' and delete the three marker "
        "lines ('<<<<<<<', '=======', '>>>>>>>'), then run campaign render and campaign check",
    ),
    Code(
        id="EOL006",
        message="a rejected hunk of an update ({target} did not take it)",
        hint="apply the hunk to {target} by hand (or drop it), then delete {file}",
    ),
)
BY_ID = {code.id: code for code in CODES}
_OPENING = re.compile(rb"^<<<<<<<(?: |\r?$)", re.MULTILINE)


def conflicts(data: bytes) -> list[int]:
    """1-based line numbers of each opening conflict marker in ``data``."""
    return [data.count(b"\n", 0, m.start()) + 1 for m in _OPENING.finditer(data)]


def check(ctx: CheckContext, files: tuple[str, ...]) -> Iterator[Finding]:
    """EOL005 for each of ``files`` holding a conflict; EOL006 for each ``*.rej`` file of the
    campaign (a full run only: pre-commit passes tracked files, and a .rej is not one)."""
    if ctx.wants("EOL005"):
        for rel in files:
            data = ctx.reader.read_bytes(rel)
            if data is None or b"<<<<<<<" not in data or b"\x00" in data:
                continue
            lines = conflicts(data)
            if lines:
                yield BY_ID["EOL005"].at(rel, lines[0], 1, lineno=lines[0], count=len(lines))
    if ctx.wants("EOL006") and not ctx.explicit:
        for rel in ctx.tree:
            if rel.endswith(".rej"):
                target = rel.removesuffix(".rej")
                yield BY_ID["EOL006"].at(rel, 1, 1, target=target, file=rel)
