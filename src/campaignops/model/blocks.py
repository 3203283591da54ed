"""Generated blocks in Markdown: the marker grammar, and splicing new content between markers.

A block is the text between ``<!-- campaign:begin NAME -->`` and ``<!-- campaign:end NAME -->``,
each marker alone on its line (indentation and trailing blanks allowed), outside fenced code. The
tool owns the lines between the markers; every byte outside them belongs to the author. Line
endings follow the begin marker's line, so a CRLF file stays CRLF.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

_MARKER = re.compile(
    r"(?P<indent>[ \t]*)<!--[ \t]*campaign:(?P<verb>begin|end)[ \t]+"
    r"(?P<name>[A-Za-z0-9_.-]+)[ \t]*-->[ \t]*\Z"
)
# A line that starts like a marker but does not parse as one: worth a VIEW002, not silence.
_LOOSE = re.compile(r"[ \t]*<!--[ \t]*campaign:(?:begin|end)\b")
_FENCE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)\Z")


@dataclass(frozen=True)
class Block:
    """A well-formed block: its view, marker lines and columns, and its content's char range."""

    name: str
    begin: int
    col: int
    end: int
    start: int
    stop: int
    eol: str


@dataclass(frozen=True)
class Defect:
    line: int
    col: int
    problem: str


@dataclass(frozen=True)
class Parsed:
    blocks: tuple[Block, ...]
    defects: tuple[Defect, ...]


@dataclass(frozen=True)
class _Open:
    name: str
    line: int
    col: int
    start: int
    eol: str
    tainted: bool


def _fence_closes(line: str, fence: str) -> bool:
    match = _FENCE.match(line)
    return bool(
        match
        and match["fence"][0] == fence[0]
        and len(match["fence"]) >= len(fence)
        and not match["info"].strip()
    )


@dataclass
class _Scan:
    """The state of one pass of ``parse``: the open blocks, and what was found so far."""

    known: Collection[str]
    blocks: list[Block] = field(default_factory=list)
    defects: list[Defect] = field(default_factory=list)
    stack: list[_Open] = field(default_factory=list)

    def loose(self, number: int, line: str) -> None:
        col = len(line) - len(line.lstrip(" \t")) + 1
        self.defects.append(Defect(number, col, "malformed view marker: " + line.strip()))
        if self.stack:
            self.stack[-1] = replace(self.stack[-1], tainted=True)

    def begin(self, name: str, number: int, col: int, pos: int, raw: str) -> None:
        tainted = bool(self.stack) or name not in self.known
        if self.stack:
            # Every enclosing block now holds a stray marker: none of them is safe to rewrite.
            self.stack = [replace(o, tainted=True) for o in self.stack]
            outer = self.stack[0]
            self.defects.append(
                Defect(
                    number,
                    col,
                    f"view {name!r} begins inside view {outer.name!r} "
                    f"(line {outer.line}); blocks do not nest",
                )
            )
        elif name not in self.known:
            self.defects.append(Defect(number, col, f"unknown view {name!r}"))
        eol = "\r\n" if raw.endswith("\r") else "\n"
        self.stack.append(_Open(name, number, col, pos, eol, tainted))

    def end(self, name: str, number: int, col: int, start: int) -> None:
        stack = self.stack
        if not stack:
            self.defects.append(Defect(number, col, f"end of view {name!r} without a begin marker"))
            return
        while stack[-1].name != name and name in (o.name for o in stack):
            lost = stack.pop()
            self.defects.append(
                Defect(lost.line, lost.col, f"view {lost.name!r} has no end marker")
            )
        top = stack.pop()
        if top.name != name:
            self.defects.append(
                Defect(
                    number,
                    col,
                    f"end of view {name!r} closes view {top.name!r} (begun at line {top.line})",
                )
            )
        if stack:
            stack[-1] = replace(stack[-1], tainted=True)
        elif not top.tainted and top.name == name:
            self.blocks.append(Block(name, top.line, top.col, number, top.start, start, top.eol))

    def parsed(self) -> Parsed:
        unclosed = (Defect(o.line, o.col, f"view {o.name!r} has no end marker") for o in self.stack)
        defects = sorted([*self.defects, *unclosed], key=lambda d: d.line)
        return Parsed(blocks=tuple(self.blocks), defects=tuple(defects))


def parse(text: str, *, known: Collection[str]) -> Parsed:
    """Find the blocks of ``text`` and every marker defect (VIEW002), in one pass.

    Only top-level, properly closed blocks whose name is in ``known`` are returned; anything
    nested, mismatched or unknown is reported and left alone, so rendering never eats author text.
    Markers inside fenced code (outside any block) are examples, not markers.
    """
    scan = _Scan(known)
    fence: str | None = None
    pos = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        start, pos = pos, pos + len(raw) + 1
        line = raw.removesuffix("\r")
        if fence is not None:
            if _fence_closes(line, fence):
                fence = None
            continue
        match = _MARKER.match(line)
        if match is None:
            if _LOOSE.match(line):
                scan.loose(number, line)
            elif not scan.stack:
                opening = _FENCE.match(line)
                if opening and not (opening["fence"][0] == "`" and "`" in opening["info"]):
                    fence = opening["fence"]
        elif match["verb"] == "begin":
            scan.begin(match["name"], number, len(match["indent"]) + 1, pos, raw)
        else:
            scan.end(match["name"], number, len(match["indent"]) + 1, start)
    return scan.parsed()


def content(body: str, eol: str = "\n") -> str:
    """What sits between the markers for a rendered ``body``: blank lines around it."""
    return f"\n{body}\n\n".replace("\n", eol)


def in_sync(text: str, block: Block, body: str) -> bool:
    return text[block.start : block.stop] == content(body, block.eol)


def refresh(text: str, parsed: Parsed, render: Callable[[str], str]) -> str:
    """``text`` with every block's content re-rendered; nothing outside the blocks changes."""
    pieces: list[str] = []
    pos = 0
    for block in parsed.blocks:
        pieces += [text[pos : block.start], content(render(block.name), block.eol)]
        pos = block.stop
    pieces.append(text[pos:])
    return "".join(pieces)
