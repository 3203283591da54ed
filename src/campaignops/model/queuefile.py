"""Queue files: one cell per line, ``<cfg_path> <task> [epochs]``, read the way the wrapper reads.

The queue wrapper reads each line with ``IFS=' ' read -r cfg task epochs``, so this parser accepts
exactly what that loop handles well and reports the rest as problems instead of guessing:

* only spaces separate fields (runs of them are fine); a TAB or other whitespace or control
  character is glued into a field by ``read``, so it is a problem;
* ``#`` starts a comment only as the first non-space character of a line: ``read`` does not strip
  a trailing ``# note``, it would land in ``task`` or ``epochs``;
* the cell's name (its isolation key: output directory and log are named by it) is the config's
  basename without its last extension.

The parser is pure and total: any string gives a QueueFile, never an exception.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

USAGE = "'<cfg_path> <task> [epochs]'"
_FIELD = re.compile(r"[^ ]+")
_DIGITS = re.compile(r"[0-9]+\Z")
# Past this many digits a number is a typo, and int() of a huge string is slow (or refused).
_MAX_EPOCH_DIGITS = 9


@dataclass(frozen=True)
class Cell:
    """One queued run. ``line`` is 1-based; ``cfg`` is as written (relative to the campaign root)."""

    line: int
    cfg: str
    task: str
    epochs: int | None
    name: str


@dataclass(frozen=True)
class Problem:
    """A line the wrapper would misread, at the 1-based line and column of the offending field."""

    line: int
    col: int
    message: str


@dataclass(frozen=True)
class QueueFile:
    cells: tuple[Cell, ...]
    problems: tuple[Problem, ...]


def lines(text: str) -> list[str]:
    """The lines ``read`` sees: split on LF only, a final LF ends the last line, CRs at the end of
    a line removed (EOL reports them; reporting them here too would say the same thing twice)."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p.rstrip("\r") for p in parts]


def cell_name(cfg: str) -> str:
    """The config's basename without its last extension (a leading dot is not an extension)."""
    base = cfg.rstrip("/").rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[:dot] if dot > 0 else base


def is_comment(line: str) -> bool:
    return line.lstrip(" ").startswith("#")


def is_blank(line: str) -> bool:
    return line.strip(" ") == ""


def _describe(ch: str) -> str:
    if ch == "\t":
        return "a TAB"
    kind = "control character" if unicodedata.category(ch) == "Cc" else "whitespace character"
    return f"{kind} U+{ord(ch):04X}"


def _bad_char(line: str) -> tuple[int, str] | None:
    for i, ch in enumerate(line):
        if ch != " " and (ch.isspace() or unicodedata.category(ch) == "Cc"):
            return i, _describe(ch)
    return None


def _cfg_problem(cfg: str) -> str | None:
    if cfg.startswith("/"):
        return f"config path {cfg!r} is absolute; write it relative to the campaign root"
    parts = cfg.split("/")
    if ".." in parts:
        return f"config path {cfg!r} has a '..' component; configs must be inside the campaign"
    if parts[-1] in ("", "."):
        return f"config path {cfg!r} names a directory, not a config file"
    if cell_name(cfg).startswith("."):
        return (
            f"config {parts[-1]!r} gives the cell name {cell_name(cfg)!r}; a name starting "
            "with '.' would be a hidden output directory, and the wrapper refuses it"
        )
    return None


def epochs_problem(value: object) -> str | None:
    """Why ``value`` (from YAML: smoke.args.epochs) is not an epochs field the wrapper takes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return f"epochs {value!r} is not a positive integer"
    return _epochs(str(value))[1]


def _epochs(raw: str) -> tuple[int | None, str | None]:
    if not _DIGITS.match(raw):
        return None, f"epochs {raw!r} is not a positive integer"
    if len(raw) > 1 and raw.startswith("0"):
        return None, f"epochs {raw!r} has a leading zero (bash arithmetic reads it as octal)"
    if len(raw) > _MAX_EPOCH_DIGITS:
        return None, f"epochs {raw!r} is too large"
    value = int(raw)
    if value == 0:
        return None, "epochs 0 is not a positive integer"
    return value, None


def parse_line(number: int, line: str) -> Cell | Problem | None:
    """One line: a Cell, a Problem, or None for a blank or comment line."""
    if is_blank(line) or is_comment(line):
        return None
    bad = _bad_char(line)
    if bad is not None:
        col, what = bad
        return Problem(number, col + 1, f"{what} in the line; fields are separated by spaces only")
    fields = [(m.start() + 1, m.group()) for m in _FIELD.finditer(line)]
    for col, text in fields[1:]:
        if text.startswith("#"):
            return Problem(
                number,
                col,
                "a comment after the fields; '#' starts a comment only at the start of a line",
            )
    if len(fields) > 3:
        return Problem(number, fields[3][0], f"{len(fields)} fields; expected {USAGE}")
    (cfg_col, cfg), *rest = fields
    if not rest:
        return Problem(number, cfg_col + len(cfg), f"no task after the config; expected {USAGE}")
    cfg_problem = _cfg_problem(cfg)
    if cfg_problem is not None:
        return Problem(number, cfg_col, cfg_problem)
    epochs: int | None = None
    if len(rest) == 2:
        epochs_col, raw = rest[1]
        epochs, epochs_problem = _epochs(raw)
        if epochs_problem is not None:
            return Problem(number, epochs_col, epochs_problem)
    return Cell(line=number, cfg=cfg, task=rest[0][1], epochs=epochs, name=cell_name(cfg))


def parse(text: str) -> QueueFile:
    """Every cell and every problem of a queue file's text."""
    cells: list[Cell] = []
    problems: list[Problem] = []
    for number, line in enumerate(lines(text), start=1):
        parsed = parse_line(number, line)
        if isinstance(parsed, Cell):
            cells.append(parsed)
        elif isinstance(parsed, Problem):
            problems.append(parsed)
    return QueueFile(cells=tuple(cells), problems=tuple(problems))


@dataclass(frozen=True)
class Edit:
    """The first change to a queue file that is not an append, at a 1-based line of the new text."""

    line: int
    change: str


def _quote(line: str, limit: int = 60) -> str:
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")


def commented_out(old: str, new: str) -> bool:
    """True when ``new`` is ``old`` behind a ``#`` (``# X`` or ``#X``, leading spaces allowed)."""
    stripped = new.lstrip(" ")
    if not stripped.startswith("#"):
        return False
    rest = stripped[1:]
    return rest in (old, " " + old)


def first_edit(old: str, new: str) -> Edit | None:
    """Compare a queue file with its earlier text; None when the only changes are allowed ones.

    Allowed: lines appended at the end, and lines commented out in place. Both keep every earlier
    line at its index, so a queue resumed with ``start_index`` k still skips the same k lines.
    Line endings are compared as :func:`lines` reads them, so a CRLF→LF fix is not an edit.
    """
    before, after = lines(old), lines(new)
    for i, was in enumerate(before):
        if i >= len(after):
            gone = len(before) - i
            what = f"line {i + 1} was" if gone == 1 else f"lines {i + 1}-{len(before)} were"
            return Edit(max(len(after), 1), f"{what} deleted from the end")
        now = after[i]
        if now == was or commented_out(was, now):
            continue
        n = i + 1
        if sorted(before[i:]) == sorted(after[i : len(before)]):
            return Edit(n, f"lines were reordered from line {n}")
        tail = before[i + 1 :]
        if tail and after[i : i + len(tail)] == tail:
            return Edit(n, f"line {n} ({_quote(was)}) was deleted")
        if after[i + 1 : i + 1 + len(before) - i] == before[i:]:
            return Edit(n, f"a line was inserted at line {n}, before the end")
        return Edit(n, f"line {n} was changed (it was {_quote(was)})")
    return None
