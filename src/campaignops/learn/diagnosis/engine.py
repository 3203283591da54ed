"""Match a failed task's log and verdict against the catalog: one deterministic answer.

The rule, in order (docs/runner.md "Diagnosis" gives the reasons and sources):

1. Only entries for this backend count: an entry with ``backends`` applies where one of them is
   the backend's page name or kind.
2. The scheduler's verdict decides the category when it names one (OUT_OF_MEMORY, TIMEOUT,
   PREEMPTED, NODE_FAIL, a PBS kill code, a never-satisfiable pending reason); log lines then
   only choose the entry within that category.
3. Every entry is tried on every line, case-insensitively. Lines that read as warnings or info
   (``UserWarning``, ``WARNING:``, ``NCCL INFO``) are evidence only for entries that opt in
   (``warnings: true``), and only when no error line matched at all.
4. The earliest matching line wins: a failure's consequences come after it (peers losing their
   connection after one rank's OOM; Python's chained tracebacks print the original first;
   TorchElastic reports the first observed failure as the root cause).
5. On that line the most specific match wins: an entry written for this backend over a general
   one, then the matcher with more literal characters. Equal candidates of one category give
   the category without an entry; of several categories, no answer: never a guess.
6. An entry that ``refines`` others never answers alone (unless it is ``standalone``); when the
   answer is one of the entries it refines and it matches a line anywhere in the log, it is
   the answer (the earliest such line). A message two failures share ("Disk quota exceeded")
   is told apart by evidence printed elsewhere in the log (the quota table's files column
   over its limit). An entry with ``table_header`` reads only the rows of such a table: the
   lines right after a header line it names, up to the first line that is not a row.
7. No line matched but the verdict names a category: the entry that lists the verdict's state
   in ``verdicts`` (if exactly one), else the category alone.

A task nothing explains has ``category`` None, and its breaker signature is its state, exit
code and normalised last error line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from campaignops.learn.diagnosis import logtext
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model.catalog import Catalog, Entry

# Lines that report rather than fail: a Python warning (UserWarning: …), NCCL's INFO and WARN
# lines, and lines that open with a warning or info level ("WARNING:", "[W socket.cpp…]",
# glog's "W1124"). A level in mid-line (a Kubernetes event's "Warning" column, a training
# logger's "- INFO - … loss: nan") does not make the line quiet: there it is often the failure.
_QUIET = re.compile(
    r"\b[A-Z]\w*Warning:|\bNCCL (?:INFO|WARN)\b"
    r"|^\[?(?:warn(?:ing)?|info|debug|notice)\]?(?:[:\s]|$)|^\[?[IW]\d{4} |^\[[IW] ",
    re.IGNORECASE,
)
_LOUD = re.compile(r"error\b|fatal|exception\b|traceback|\*\*\*", re.IGNORECASE)
# A line that reports an error, for the signature of an unknown failure.
_ERROR_LINE = re.compile(
    r"error|exception|traceback|fatal|abort|panic|killed|segmentation fault|core dumped"
    r"|out of memory|\boom|failed|failure|cannot|can't|not found|no such file|denied|\bnan\b",
    re.IGNORECASE,
)
_MASKS = (
    (re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/[^\s:'\"(),\[\]]+"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F-]*[a-fA-F])(?=[0-9a-fA-F-]*[0-9])[0-9a-fA-F-]{8,}\b"), "<hex>"),
    (re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)
SIGNATURE_LINE = 200
# A table row: a first field (a file system, a user, a path) and then a number or "-". A
# table an entry reads through ``table_header`` ends at the first line that is not one.
_ROW = re.compile(r"^\S+\s+(?:\d|-(?:\s|$))")


@dataclass(frozen=True)
class Match:
    entry: Entry
    line: int
    text: str
    anchor: int
    quiet: bool


@dataclass(frozen=True)
class Diagnosis:
    entry: Entry | None
    category: str | None
    matches: tuple[Match, ...]
    evidence: Evidence
    signature: str
    why: str  # how the answer was reached, in one sentence
    last_error: logtext.Line | None = None  # the log's last error line, as printed

    @property
    def entry_id(self) -> str | None:
        return self.entry.id if self.entry is not None else None


def quiet(text: str) -> bool:
    """A warning or info line (and not also an error line)."""
    return bool(_QUIET.search(text)) and not _LOUD.search(text)


def normalise(line: str) -> str:
    """An error line with what varies between attempts masked: paths, hex, numbers, spacing."""
    text = line
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()[:SIGNATURE_LINE]


def find_matches(
    lines: Sequence[logtext.Line],
    entries: Sequence[Entry],
    any_line: re.Pattern[str] | None = None,
) -> list[Match]:
    """Every (entry, line) pair that matches, with the entry's most specific matcher there.
    ``any_line`` (every matcher joined) skips, in one search, the lines nothing matches."""
    out: list[Match] = []
    tabled = [e for e in entries if e.table_header]
    in_table: set[str] = set()  # ids of the entries whose table the current line belongs to
    for line in lines:
        headers = _table_lines(line.text, tabled, in_table)
        if any_line is not None and not any_line.search(line.text):
            continue
        is_quiet = quiet(line.text)
        for entry in entries:
            if is_quiet and not entry.warnings:
                continue
            if entry.table_header and (entry.id not in in_table or entry.id in headers):
                continue
            best = max(
                (m.anchor for m in entry.matchers if m.regex.search(line.text)), default=None
            )
            if best is not None:
                out.append(Match(entry, line.number, line.text, best, is_quiet))
    return out


def _table_lines(text: str, tabled: Sequence[Entry], in_table: set[str]) -> set[str]:
    """Update ``in_table`` for this line: a header opens its entries' table, a line that is not
    a row closes it. The ids whose header this very line is are returned (not a row)."""
    headers = {e.id for e in tabled if any(m.regex.search(text) for m in e.table_header)}
    if not _ROW.search(text):
        in_table.clear()
    in_table |= headers
    return headers


def _pick(
    matches: Sequence[Match], backend: str | None, kind: str | None
) -> tuple[Entry | None, str | None, str]:
    loud = [m for m in matches if not m.quiet]
    pool = loud or list(matches)
    first = min(m.line for m in pool)
    on_line = [m for m in pool if m.line == first]

    def key(m: Match) -> tuple[bool, int]:
        return (m.entry.restricted_to(backend, kind), m.anchor)

    top = max(key(m) for m in on_line)
    best = {m.entry.id: m.entry for m in on_line if key(m) == top}
    cats = {e.category for e in best.values()}
    where = f"line {first}" + (" (a warning line)" if not loud else "")
    if len(best) == 1:
        (entry,) = best.values()
        return entry, entry.category, f"the earliest matching line, {where}"
    if len(cats) == 1:
        return None, cats.pop(), f"{where} matches {len(best)} entries of one category equally"
    return None, None, f"{where} matches entries of {len(cats)} categories equally: no answer"


def diagnose(
    text: str,
    *,
    catalog: Catalog,
    evidence: Evidence | None = None,
    backend: str | None = None,
    kind: str | None = None,
) -> Diagnosis:
    """The catalog's answer for a task whose log tail is ``text`` (empty when none)."""
    evidence = evidence or Evidence()
    lines = logtext.lines_of(text)
    entries = [e for e in catalog.entries if e.applies_to(backend, kind)]
    matches = find_matches(lines, entries, catalog.any_line)
    verdict = evidence.category
    counted = [m for m in matches if verdict is None or m.entry.category == verdict]
    answering = [m for m in counted if not m.entry.refines or m.entry.standalone]
    entry: Entry | None
    if answering:
        entry, category, why = _pick(answering, backend, kind)
        entry, category, why = _refine(entry, category, why, counted)
        if verdict is not None:
            why += f" within {verdict}, which the scheduler's {evidence.state} decided"
    elif verdict is not None:
        entry, category, why = _by_verdict(entries, evidence, verdict, backend, kind)
    else:
        entry, category, why = None, None, "no catalog entry matches the log or the verdict"
    return Diagnosis(
        entry=entry,
        category=category,
        matches=tuple(matches),
        evidence=evidence,
        signature=signature(entry, category, evidence, lines),
        why=why,
        last_error=last_error(lines),
    )


def _refine(
    entry: Entry | None, category: str | None, why: str, matches: Sequence[Match]
) -> tuple[Entry | None, str | None, str]:
    """The answer, or the entry whose evidence refines it (its earliest matching line)."""
    if entry is None:
        return entry, category, why
    refining = [m for m in matches if entry.id in m.entry.refines]
    if not refining:
        return entry, category, why
    best = min(refining, key=lambda m: (m.line, m.entry.order))
    note = f"{why}; line {best.line} refines {entry.id} into {best.entry.id}"
    return best.entry, best.entry.category, note


def _by_verdict(
    entries: Sequence[Entry],
    evidence: Evidence,
    verdict: str,
    backend: str | None,
    kind: str | None,
) -> tuple[Entry | None, str, str]:
    state = (evidence.state or "").upper()
    named = [e for e in entries if e.category == verdict and state in e.verdicts]
    own = [e for e in named if e.restricted_to(backend, kind)] or named
    why = f"the scheduler's verdict ({evidence.describe()}); no log line matched"
    if len(own) == 1:
        return own[0], verdict, why
    return None, verdict, why


def last_error(lines: Sequence[logtext.Line]) -> logtext.Line | None:
    """The last line that reads as an error (what a person looks at first in an unknown)."""
    return next((ln for ln in reversed(lines) if _ERROR_LINE.search(ln.text)), None)


def signature(
    entry: Entry | None, category: str | None, evidence: Evidence, lines: Sequence[logtext.Line]
) -> str:
    """What the breaker compares: the entry, else the category the verdict gave, else the
    state, exit code and normalised last error line (the same crash gives the same text)."""
    if entry is not None:
        return entry.id
    if category is not None:
        return category
    code = "-" if evidence.exit_code is None else str(evidence.exit_code)
    base = f"{evidence.state or 'FAILED'}:{code}"
    found = last_error(lines)
    text = normalise(found.text) if found is not None else ""
    return f"{base} {text}" if text else base
