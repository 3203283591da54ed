"""A task's log as the matcher sees it: the tail, split into clean lines.

The seeds' protocol reads ``tail -200`` of a failed task's log; so does ``diagnose``, with a
byte bound too (a log of one 2 GB line must not be read whole). Lines are split on ``\\r`` as
well as ``\\n``: a progress bar rewrites its line with ``\\r`` and a crash banner often shares
that physical line. Then what varies between tools, and never identifies an error, goes:
ANSI colour codes, a leading timestamp, the ``[rank3]:`` / ``[default0]:`` / ``3:`` prefixes of
torchrun and ``srun --label``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

TAIL_LINES = 200
TAIL_BYTES = 256 * 1024
MAX_LINE = 2000  # characters of a line the matchers see (bounds every match's cost)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# A leading date/time stamp in the common forms (ISO 8601, syslog, glog's I1124 12:00:00.123).
_STAMP = re.compile(
    r"^\s*\[?(?:"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}"
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+(?: +\d+)?"
    r")\]?[\s:,|-]*"
)
# torchrun's [rank3]: / [default0]:, and srun --label's "3: ".
_PREFIX = re.compile(r"^\s*(?:\[(?:rank|default)\d+\]:|\d{1,5}: )\s*")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the tail that was read
    text: str  # cleaned


def clean(raw: str) -> str:
    text = _ANSI.sub("", raw)
    for _ in range(2):  # "[rank0]: 2026-11-24 10:00:00 ..." and the reverse
        text = _PREFIX.sub("", _STAMP.sub("", text, count=1), count=1)
    return text.strip()[:MAX_LINE]


def lines_of(text: str) -> list[Line]:
    """Every non-empty line of ``text``, cleaned, numbered in order of appearance."""
    out: list[Line] = []
    number = 0
    for physical in text.split("\n"):
        for part in physical.split("\r"):
            number += 1
            cleaned = clean(part)
            if cleaned:
                out.append(Line(number=number, text=cleaned))
    return out


def tail(path: Path, *, lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``lines`` lines of ``path`` (at most its last ``max_bytes`` bytes), decoded
    leniently: a log is whatever the task wrote, not necessarily UTF-8. Raises OSError."""
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - max_bytes)
        handle.seek(start)
        data = handle.read(max_bytes)
    if start > 0:
        data = data.partition(b"\n")[2]  # the first line was cut by the byte bound
    text = data.decode("utf-8", errors="replace").replace("\x00", "")
    return "\n".join(text.splitlines()[-lines:])
