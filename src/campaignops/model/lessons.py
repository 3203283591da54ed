"""LESSONS.md: the one-line lesson format, reading it back, and where a new line goes.

A lesson is one Markdown list item under the ``## Lessons`` heading:

    - 2026-11-24 · smoke of lr-0.1 died at step 0 (job 4242_1) · halved the batch size · cuda-oom

four fields joined by `` · `` (space, U+00B7 MIDDLE DOT, space): the day of the fix, what
failed, what fixed it, and the failures.yaml entry id or ``new``. The ``- `` is optional when
reading (the template's first wording had none); ``campaign lesson add`` always writes it, so
each lesson renders as its own line. Everything here is pure: text in, text or records out;
campaignops.learn.lesson_job finds the job a ``--job`` names; campaignops.learn.lesson_add reads and writes
the files.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from campaignops.core.errors import InputError, UsageError

FILE = "LESSONS.md"
SEPARATOR = " · "
NEW = "new"
BULLET = "- "
SECTION_TITLE = "Lessons"
SECTION = f"## {SECTION_TITLE}"
FORMAT = f"{BULLET}YYYY-MM-DD{SEPARATOR}what failed{SEPARATOR}what fixed it{SEPARATOR}<failures.yaml id or new>"
# What a missing LESSONS.md is created with (the template's file says more).
NEW_FILE_HEAD = (
    "# Lessons learned\n\n"
    f"One line per lesson, newest last: `{FORMAT}`.\n"
    "Append with `campaign lesson add`; `campaign check` (LESSON) keeps the format.\n\n"
)

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
# The catalog's id rule (schemas/failures.schema.json), so a LESSON001 never hides a LESSON002.
ENTRY_ID = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
# Characters str.splitlines() breaks on: any of them would make one lesson two lines somewhere.
_BREAKS = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*\Z")
_FENCE = re.compile(r" {0,3}(```|~~~)")


# --- one line -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Lesson:
    """One lesson, its fields already one line each (build it with ``make``)."""

    day: dt.date
    failed: str
    fixed: str
    entry: str

    def render(self) -> str:
        """The line without its line ending."""
        fields = (self.day.isoformat(), self.failed, self.fixed, self.entry)
        return BULLET + SEPARATOR.join(fields)


def clean_field(name: str, value: str) -> str:
    """``value`` as one field: runs of whitespace become one space, ends stripped.

    Refused (UsageError, exit 2): a line break of any kind, a control character, an empty
    field, and a ``·`` that touches a space or an end of the field (it would read as the
    separator, and the line would no longer parse back into the same four fields).
    """
    if _BREAKS.search(value):
        raise UsageError(
            message=f"{name} spans more than one line: {value!r}",
            hint="a lesson is one line; the detail belongs in the commit message and failures.yaml",
        )
    if _CONTROL.search(value):
        raise UsageError(
            message=f"{name} contains a control character: {value!r}",
            hint="write it as plain text",
        )
    clean = " ".join(value.split())
    if not clean:
        raise UsageError(message=f"{name} is empty", hint=f"a lesson is {FORMAT}")
    if clean.startswith("·") or clean.endswith("·") or " ·" in clean or "· " in clean:
        raise UsageError(
            message=f"{name} contains the field separator '{SEPARATOR.strip()}': {clean!r}",
            hint=f"fields are joined by '{SEPARATOR}'; write a comma or 'and' instead",
        )
    return clean


def sanitize(text: str, *, limit: int = 120) -> str:
    """Any text (a log line, an entry's title) as a field ``clean_field`` accepts: breaks and
    control characters become spaces, a ``·`` becomes ``-``, long text is cut at a word with
    ``…``. For proposing a lesson from machine text; what a person types is refused instead."""
    text = _CONTROL.sub(" ", _BREAKS.sub(" ", text)).replace("·", "-")
    clean = " ".join(text.split()) or "?"
    if len(clean) > limit:
        head = clean[: limit - 1]
        clean = (head.rsplit(" ", 1)[0] if " " in head else head).rstrip() + "…"
    return clean


def with_job(failed: str, label: str) -> str:
    """What failed, naming the job (once: not again when the text already names it)."""
    if re.search(rf"(?<![\w.-]){re.escape(label)}(?![\w.-])", failed):
        return failed
    return f"{failed} (job {label})"


def make(*, day: dt.date, failed: str, fixed: str, entry: str, job: str | None = None) -> Lesson:
    """A Lesson from raw text: fields cleaned (see ``clean_field``), the job named in what
    failed, the entry checked for shape only (``known_entry`` checks it against the catalog)."""
    what_failed = clean_field("what failed", failed)
    if job is not None:
        what_failed = clean_field("what failed", with_job(what_failed, clean_field("--job", job)))
    entry = entry.strip()
    if not ENTRY_ID.match(entry):
        raise UsageError(
            message=f"entry {entry!r} is not a failures.yaml id",
            hint="ids are lowercase letters, digits and dashes; or pass new",
        )
    return Lesson(
        day=day, failed=what_failed, fixed=clean_field("what fixed it", fixed), entry=entry
    )


def known_entry(entry: str, known: Sequence[str]) -> str:
    """``entry`` when it is ``new`` or an id of the catalog, else UsageError with the ids."""
    if entry == NEW or entry in known:
        return entry
    raise UsageError(message=f"no entry {entry!r} in failures.yaml", hint=ids_hint(entry, known))


def close_ids(entry: str, known: Sequence[str]) -> str:
    """``did you mean a, b? `` for ids near ``entry`` (a typo, a renamed entry), else ``""``."""
    import difflib

    close = difflib.get_close_matches(entry, known, n=3, cutoff=0.6)
    return f"did you mean {', '.join(close)}? " if close else ""


def ids_hint(entry: str, known: Sequence[str]) -> str:
    guess = close_ids(entry, known)
    listed = ", ".join(sorted(known)) if known else "(the catalog has no entries)"
    return f"{guess}pass new, or one of the {len(known)} ids in failures.yaml: {listed}"


def catalog_ids(data: Any) -> tuple[str, ...]:
    """The entry ids of a parsed failures.yaml (whatever its shape: POLICY judges that)."""
    entries = data.get("failures") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        return ()
    ids = (e.get("id") for e in entries if isinstance(e, Mapping))
    return tuple(dict.fromkeys(i for i in ids if isinstance(i, str)))


def command(
    *,
    failed: str,
    fixed: str = "WHAT FIXED IT",
    job: str | None = None,
    entry: str | None = None,
) -> str:
    """The ``campaign lesson add …`` command line for these fields, quoted for a POSIX shell:
    what ``campaign diagnose`` offers to paste once the fix is known."""
    argv = ["campaign", "lesson", "add", failed, fixed]
    if job is not None:
        argv += ["--job", job]
    if entry is not None:
        argv += ["--entry", entry]
    return shlex.join(argv)


# --- reading a file back ------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A well-formed lesson line: its 1-based line, and the columns of its date and entry."""

    line: int
    date: str
    date_col: int
    failed: str
    fixed: str
    entry: str
    entry_col: int

    def day(self) -> dt.date | None:
        try:
            return dt.date.fromisoformat(self.date)
        except ValueError:
            return None


@dataclass(frozen=True)
class Malformed:
    """A line under ``## Lessons`` that is not a lesson: where, and what is wrong."""

    line: int
    col: int
    problem: str


def parse_line(text: str, line: int = 1) -> Entry | Malformed:
    """One line (without its ending; trailing blanks are ignored) as a lesson or a defect."""
    body = text.rstrip()
    start = len(BULLET) if body.startswith(BULLET) else 0
    parts = body[start:].split(SEPARATOR)
    if len(parts) != 4:
        return Malformed(line, 1, f"{len(parts)} field(s) separated by '{SEPARATOR}', 4 expected")
    cols = []
    col = start + 1
    for part in parts:
        cols.append(col)
        col += len(part) + len(SEPARATOR)
    names = ("the date", "what failed", "what fixed it", "the entry")
    for name, part, at in zip(names, parts, cols, strict=True):
        if not part.strip():
            return Malformed(line, at, f"{name} is empty")
        if part != part.strip():
            return Malformed(line, at, f"{name} has extra spaces around it")
    date, failed, fixed, entry = parts
    if not _DATE.match(date):
        return Malformed(line, cols[0], f"the date {date!r} is not YYYY-MM-DD")
    if not ENTRY_ID.match(entry):
        return Malformed(line, cols[3], f"the entry {entry!r} is not a failures.yaml id or new")
    return Entry(line, date, cols[0], failed, fixed, entry, cols[3])


@dataclass(frozen=True)
class _Line:
    number: int
    text: str  # without its line ending
    end: int  # offset just past its line ending (or the end of the text)
    ended: bool  # has a line ending


def _lines(text: str) -> list[_Line]:
    """Lines split at LF (a CRLF's CR is dropped), so numbers match every editor's."""
    found: list[_Line] = []
    offset = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        end = offset + len(raw)
        ended = end < len(text)
        if not raw and not ended:
            break  # the empty "line" after a final newline
        found.append(_Line(number, raw.removesuffix("\r"), end + int(ended), ended))
        offset = end + 1
    return found


def _heading(text: str) -> tuple[int, str] | None:
    match = _HEADING.match(text.removeprefix("\ufeff"))
    if match is None:
        return None
    return len(match.group(1)), (match.group(2) or "").rstrip("#").strip()


@dataclass(frozen=True)
class _Section:
    heading: int  # index into the lines
    stop: int  # index of the first line after the section


def _sections(lines: Sequence[_Line]) -> Iterator[_Section]:
    """Every ``## Lessons`` section (outside code fences), up to the next heading of level ≤ 2."""
    fence: str | None = None
    start: int | None = None
    for i, ln in enumerate(lines):
        marker = _FENCE.match(ln.text)
        if marker:
            fence = None if fence == marker.group(1) else fence or marker.group(1)
            continue
        if fence is not None:
            continue
        head = _heading(ln.text)
        if head is None or head[0] > 2:
            continue
        if start is not None:
            yield _Section(start, i)
            start = None
        if head[0] == 2 and head[1].lower() == SECTION_TITLE.lower():
            start = i
    if start is not None:
        yield _Section(start, len(lines))


def scan(text: str) -> Iterator[Entry | Malformed]:
    """Each non-blank line under every ``## Lessons`` heading: a lesson or a defect.

    Sub-headings (``###`` and deeper) may group lessons; anything else is a defect, including
    the markers of a fenced block (which would show its lines as code, not as lessons).
    """
    lines = _lines(text)
    for section in _sections(lines):
        for ln in lines[section.heading + 1 : section.stop]:
            if not ln.text.strip():
                continue
            head = _heading(ln.text)
            if head is not None and head[0] > 2:
                continue
            yield parse_line(ln.text, ln.number)


# --- where a new line goes ----------------------------------------------------------------


def newline_of(text: str) -> str:
    """The file's line ending: LF, or CRLF when every line ends so; mixed ones are refused,
    since no choice would match the file (convert it first)."""
    if "\r" not in text:
        return "\n"
    crlf, lf, cr = text.count("\r\n"), text.count("\n"), text.count("\r")
    if crlf == lf == cr:
        return "\r\n"
    raise InputError(
        path=FILE,
        message=f"mixed line endings ({crlf} CRLF, {lf - crlf} LF, {cr - crlf} lone CR); "
        "not appended",
        hint="convert it to LF (sed -i 's/\\r$//' LESSONS.md; .gitattributes keeps *.md LF), "
        "then add the lesson again",
    )


@dataclass(frozen=True)
class Plan:
    """The file's new text, the 1-based line the lesson lands on, and what had to be made."""

    text: str
    line: int
    created_file: bool
    created_section: bool


def plan_append(text: str | None, line: str) -> Plan:
    """Where ``line`` goes: after the last non-blank line of the first ``## Lessons`` section
    (newest last), the section appended at the end when there is none, the file made when
    ``text`` is None. Existing lines are never changed: the result is the old text with lines
    inserted at one place (and a final line ending where the last line had none)."""
    if _BREAKS.search(line):
        raise ValueError(f"a lesson line contains a line break: {line!r}")
    if text is None:
        prefix = NEW_FILE_HEAD + SECTION + "\n\n"
        return Plan(prefix + line + "\n", prefix.count("\n") + 1, True, True)
    nl = newline_of(text)
    lines = _lines(text)
    section = next(_sections(lines), None)
    if section is None:
        pad = "" if not lines or lines[-1].ended else nl
        gap = nl if lines and lines[-1].text.strip() else ""
        prefix = text + pad + gap + SECTION + nl + nl
        return Plan(prefix + line + nl, prefix.count("\n") + 1, False, True)
    last = max(i for i in range(section.heading, section.stop) if lines[i].text.strip())
    after = lines[last]
    before = (nl if not after.ended else "") + (nl if last == section.heading else "")
    follows = lines[last + 1] if last + 1 < len(lines) else None
    closing = nl if follows is not None and _heading(follows.text) is not None else ""
    prefix = text[: after.end] + before
    return Plan(
        prefix + line + nl + closing + text[after.end :], prefix.count("\n") + 1, False, False
    )
