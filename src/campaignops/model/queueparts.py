"""The queue files `campaign split` writes: their names, their text, and what checks read back.

A part is an ordinary queue file whose first line names the queue it was split from:

    # Part 1 of 2 of queues/example.txt, made by `campaign split -n 2 --cost epochs`.

so a cell it carries from that queue is the same cell, not a second one with its name: the
QUEUE003 check (two cells never share a name) asks :func:`copies` which uses to leave out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from campaignops.model.queuefile import Cell, QueueFile

_HEADER = re.compile(r"# Part [1-9][0-9]* of [1-9][0-9]* of (.+), made by `campaign split ")


def part_name(stem: str, part: int, k: int) -> str:
    """The file name of part ``part`` (1-based) of ``k``: ``<stem>.part<i>of<K>.txt``."""
    return f"{stem}.part{part}of{k}.txt"


def cell_line(cell: Cell) -> str:
    """The cell as a queue line, fields separated by one space."""
    return " ".join((cell.cfg, cell.task, *(() if cell.epochs is None else (str(cell.epochs),))))


def part_text(*, source: str, part: int, k: int, cost: str, lines: Sequence[str]) -> str:
    """A part's file: a header saying where it came from (``cost``: the options that chose the
    costs, e.g. ``epochs --default-epochs 3``), then its lines. No figures in the header: the
    same split made again (the ledger grown by a second) gives the same bytes."""
    head = [
        f"# Part {part} of {k} of {source}, made by `campaign split -n {k} --cost {cost}`.",
        "# One cell per line, `<cfg_path> <task> [epochs]`; while a queue runs, only append",
        "# lines or comment one out in place (QUEUE004).",
    ]
    return "\n".join([*head, *lines]) + "\n"


def part_source(text: str) -> str | None:
    """The queue a part's header says it was split from, or None when ``text`` is no part."""
    first = text.split("\n", 1)[0]
    match = _HEADER.match(first)
    return match.group(1) if match else None


def copies(
    parsed: Mapping[str, QueueFile], sources: Mapping[str, str | None]
) -> frozenset[tuple[str, int]]:
    """(part, line) of each cell a part carries unchanged from the queue it was split from
    (``sources``: each file's :func:`part_source`). Only when exactly one part of that queue
    carries the cell: two parts with one cell would run it twice, which stays a collision."""
    carriers: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for rel, source in sources.items():
        if source is None or source == rel or source not in parsed or rel not in parsed:
            continue
        own = {cell_line(c) for c in parsed[source].cells}
        for cell in parsed[rel].cells:
            if cell_line(cell) in own:
                carriers.setdefault((source, cell_line(cell)), []).append((rel, cell.line))
    return frozenset(found[0] for found in carriers.values() if len(found) == 1)
