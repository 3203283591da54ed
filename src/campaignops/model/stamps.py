"""Stamps: ``verified [source] YYYY-MM`` in prose, and ``verified: YYYY-MM`` key lines.

A stamp records when a fact was last checked against its source, so the audit can say which facts
have gone stale. The parser is pure and one pass: a single precompiled search for the word
``verified`` per text, then a short, bounded token walk after each hit. The grammar is in
docs/checks-stale.md; the walk is written to fail closed on prose ("we verified that it works" is
no stamp) and to report date-shaped text that does not parse, so a typo is not silently unaged.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

# A stamp's source is at most this many tokens (joiners such as "+" included).
MAX_SOURCE_TOKENS = 6
# No stamp is longer than this; bounding the walk keeps hostile input linear.
WINDOW = 512

# English month names and the abbreviations people write, in calendar order.
_MONTH_NAMES = (
    "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august"
    "|sep sept september|oct october|nov november|dec december"
)
MONTHS = {n: i for i, names in enumerate(_MONTH_NAMES.split("|"), 1) for n in names.split()}


@dataclass(frozen=True)
class Stamp:
    """One stamp. ``line``/``col`` (1-based) locate the word "verified"; ``raw`` is the stamp's
    text with whitespace collapsed; ``date`` is the first of the month when only a month is given,
    and None when ``malformed``; ``has_day`` tells a YYYY-MM-DD stamp from a month one;
    ``key_line`` marks the YAML form ``verified: YYYY-MM``."""

    line: int
    col: int
    raw: str
    source: str | None
    date: dt.date | None
    malformed: bool
    has_day: bool = False
    key_line: bool = False


# The word is found as a literal in lower-cased text: re scans a bare literal ~30x faster than
# one wrapped in \b or in IGNORECASE. The case-insensitive form is kept for text whose
# lower-casing shifts offsets (a few Unicode letters lower-case to two characters).
WORD = "verified"
_WORD = re.compile(WORD)
_WORD_ANY_CASE = re.compile(WORD, re.IGNORECASE)
# What may sit between the word and the first token: closing emphasis, one colon.
_AFTER = re.compile(r"[*_`\"']*:?[*_]*(?=\s)")
# A Markdown link or a code span is one token even when it holds spaces.
_TOKEN = re.compile(
    r"(\s*)([*_\"'(<]*(?:\[[^\]\n]{1,200}\]\([^()\s]{1,500}\)|`[^`\n]{1,200}`)\S*|\S+)"
)
_LINK = re.compile(r"\[[^\]\n]{1,200}\]\([^()\s]{1,500}\)")
_CODE = re.compile(r"`([^`\n]{1,200})`")
_LEAD = "*_\"'(<"
_TRAIL = "*_`\"')]>.,;:!?"
# Closing punctuation ends a stamp; a comma does not (it joins sources).
_ENDING = frozenset(").;:!?]")

_ISO = re.compile(r"([0-9]{4})-([0-9]{2})(?:-([0-9]{2}))?\Z")
_YEAR = re.compile(r"[0-9]{4}\Z")
_DAY = re.compile(r"[0-9]{1,2}\Z")
# Date-shaped but not ISO: 2026-13, 2026/06, 2026-6, 2026.06, 2026-06-14T10:00, 06/2026.
_DATEISH_PREFIX = re.compile(r"[0-9]{4}[-/.][0-9]")
_DATEISH = re.compile(r"[0-9]{1,2}[-/.](?:[0-9]{1,2}[-/.])?[0-9]{4}\Z")
# Template placeholders left unfilled: YYYY-MM, yyyy-mm-dd, MM/YYYY.
_PLACEHOLDER = re.compile(r"(?=.*yyyy)(?:yyyy|mm|dd)(?:[-/.](?:yyyy|mm|dd)){0,2}\Z", re.IGNORECASE)
_PATHLIKE = re.compile(r"/|[0-9A-Za-z-]\.[0-9A-Za-z]{2,}")
# The common shapes, "verified 2026-06" and "verified host/path 2026-06", in one match; the token
# walk handles the rest (tests check that both agree).
_FAST = re.compile(
    r"[ \t]+(?:([A-Za-z][^\s()\[\]<>`*_\"']{0,200}[^\s()\[\]<>`*_\"'.,;:!?])[ \t]+)?"
    r"([0-9]{4}-[0-9]{2}(?:-[0-9]{2})?)(?=[)\]>.,;:!?*_`'\"]*(?:\s|\Z))"
)
_PREPOSITIONS = frozenset({"on", "in"})

_KEY_PREFIX = re.compile(r"[ \t]*(?:-[ \t]*)?[\"']?\Z")
_KEY_SUFFIX = re.compile(r"[\"']?[ \t]*:(?=[ \t\r\n]|\Z)")
_COMMENT = re.compile(r"(?:^|[ \t])#.*")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


class _Tok(NamedTuple):
    core: str
    start: int  # offset in the text, after any opening emphasis or bracket
    end: int  # offset after the core (and a code span's closing backtick)
    opens: bool  # an opening parenthesis or bracket precedes the core
    ends: bool  # closing punctuation follows the core
    explicit: bool  # a code span or a link: a source whatever it holds
    newline_before: bool  # the token starts a new line


class _Walk:
    """The tokens after the word, fetched lazily; a blank line or the window's end stops it."""

    def __init__(self, text: str, pos: int, endpos: int) -> None:
        self.text, self.pos, self.endpos = text, pos, endpos
        self.toks: list[_Tok] = []
        self.done = False

    def get(self, k: int) -> _Tok | None:
        while len(self.toks) <= k and not self.done:
            self._next()
        return self.toks[k] if k < len(self.toks) else None

    def _next(self) -> None:
        m = _TOKEN.match(self.text, self.pos, self.endpos)
        if m is None:
            self.done = True
            return
        sep, tok = m.group(1, 2)
        # A partial token cut by the window must not be classified; a paragraph ends a stamp.
        if (m.end() == self.endpos < len(self.text)) or sep.count("\n") > 1:
            self.done = True
            return
        self.pos = m.end()
        body = tok.lstrip(_LEAD)
        start = m.end() - len(body)
        opens = "(" in tok[: len(tok) - len(body)]
        head = body[:1]
        link = _LINK.match(body) if head == "[" else None
        code = _CODE.match(body) if head == "`" else None
        if link is not None:
            core, rest, end = link.group(), body[link.end() :], start + link.end()
        elif code is not None:
            core, rest, end = code.group(1), body[code.end() :], start + code.end()
        else:
            stripped = body.lstrip("`[") if head in ("`", "[") else body
            opens = opens or "[" in body[: len(body) - len(stripped)]
            start += len(body) - len(stripped)
            core = stripped.rstrip(_TRAIL)
            rest, end = stripped[len(core) :], start + len(core)
        ends = bool(rest) and not _ENDING.isdisjoint(rest)
        explicit = link is not None or code is not None
        self.toks.append(_Tok(core, start, end, opens, ends, explicit, "\n" in sep))


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance (edits with adjacent transpositions)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _near_month(word: str) -> bool:
    """A misspelt month ("Jnue", "Febuary"), not a short word that happens to be close ("mid")."""
    if not (3 <= len(word) <= 9 and word.isascii() and word.isalpha()):
        return False
    word = word.lower()
    limit = 1 if len(word) <= 4 else 2
    return any(abs(len(word) - len(m)) <= limit and _distance(word, m) <= limit for m in MONTHS)


def _iso(core: str) -> tuple[dt.date | None, bool] | None:
    """``(date or None if invalid, has_day)`` for ISO-shaped text, None otherwise."""
    m = _ISO.match(core)
    if m is None:
        return None
    year, month, day = int(m.group(1)), int(m.group(2)), m.group(3)
    try:
        return dt.date(year, month, int(day) if day else 1), day is not None
    except ValueError:
        return None, day is not None


class _Date(NamedTuple):
    used: int  # tokens consumed
    date: dt.date | None  # None: date-shaped but unparseable
    has_day: bool = False


def _date_at(walk: _Walk, i: int) -> _Date | None:
    """The date starting at token ``i``, well-formed or not, or None if nothing date-shaped."""
    first = walk.get(i)
    if first is None:
        return None
    core = first.core
    head = core[:1]
    if "0" <= head <= "9":
        return _numeric_date(walk, i, core)
    if head.isalpha():
        return _word_date(walk, i, core)
    return None


def _numeric_date(walk: _Walk, i: int, core: str) -> _Date | None:
    iso = _iso(core)
    if iso is not None:
        return _Date(1, iso[0], iso[1])
    if _DATEISH_PREFIX.match(core) or _DATEISH.match(core):
        return _Date(1, None)
    if _DAY.match(core):
        nxt, after = walk.get(i + 1), walk.get(i + 2)
        if (
            nxt is not None
            and after is not None
            and _YEAR.match(after.core)
            and (nxt.core.lower() in MONTHS or _near_month(nxt.core))
        ):
            return _Date(3, None)  # "14 June 2026"
    return None


def _word_date(walk: _Walk, i: int, core: str) -> _Date | None:
    if _PLACEHOLDER.match(core):
        return _Date(1, None)
    nxt = walk.get(i + 1)
    if nxt is None:
        return None
    year = _YEAR.match(nxt.core) is not None
    month = MONTHS.get(core.lower())
    if month is None:
        return _Date(2, None) if year and _near_month(core) else None
    if year:
        number = int(nxt.core)
        return _Date(2, dt.date(number, month, 1) if number else None)
    if _DAY.match(nxt.core):
        after = walk.get(i + 2)
        if after is not None and _YEAR.match(after.core):
            return _Date(3, None)  # "June 14, 2026": write 2026-06-14
        if nxt.ends or after is None or after.newline_before:
            return _Date(2, None)  # "Jun 26)": a day or a two-digit year
    return None


def _bare_year_ends(walk: _Walk, i: int) -> bool:
    """A lone year that ends the phrase: "(verified 2026)" lacks a month; "2026 runs" is prose."""
    tok = walk.get(i)
    if tok is None or not _YEAR.match(tok.core):
        return False
    nxt = walk.get(i + 1)
    return tok.ends or nxt is None or nxt.newline_before


def _prose(text: str, word_end: int) -> tuple[int, int, str | None, _Date] | None:
    """``(start, end, source, date)`` of the stamp after the word, else None."""
    m = _FAST.match(text, word_end)
    if m is not None:
        source = m.group(1)
        iso = _iso(m.group(2))
        if (
            iso is not None
            and iso[0] is not None
            and (source is None or (_PATHLIKE.search(source) and not _PLACEHOLDER.match(source)))
        ):
            return m.start(1) if source else m.start(2), m.end(2), source, _Date(1, *iso)
    return _walk_prose(text, word_end)


def _walk_prose(text: str, word_end: int) -> tuple[int, int, str | None, _Date] | None:
    """Walk the tokens after the word; ``(start, end, source, date)`` of a stamp, else None."""
    after = _AFTER.match(text, word_end)
    if after is None:
        return None
    walk = _Walk(text, after.end(), min(len(text), word_end + WINDOW))
    source: list[_Tok] = []
    preposition = False
    for i in range(MAX_SOURCE_TOKENS + 2):
        t = walk.get(i)
        if t is None:
            return None
        found = _date_at(walk, i)
        if found is None and not preposition and _bare_year_ends(walk, i):
            found = _Date(1, None)
        if found is not None:
            first, last = walk.get(0), walk.get(i + found.used - 1)
            if first is None or last is None:  # unreachable: both were fetched above
                return None
            named = _collapse(text[source[0].start : source[-1].end]) if source else None
            return first.start, last.end, named, found
        if t.ends or preposition or (i > 0 and t.opens):
            return None  # the phrase ended, or a parenthesis opened a new one
        if i == 0:
            if t.core.lower() in _PREPOSITIONS:
                preposition = True
            elif t.explicit or _PATHLIKE.search(t.core):
                source.append(t)
            else:
                return None
        elif len(source) < MAX_SOURCE_TOKENS:
            source.append(t)
        else:
            return None
    return None


def _value_date(value: str) -> _Date | None:
    """A key line's value as a date: exactly YYYY-MM or YYYY-MM-DD, as the schemas require."""
    iso = _iso(value)
    return _Date(1, iso[0], iso[1]) if iso is not None and iso[0] is not None else None


def _key_value(text: str, line_start: int, word_start: int, word_end: int) -> str | None:
    """The value of a ``verified:`` YAML key line, or None if this is not a key line."""
    if not _KEY_PREFIX.match(text, line_start, word_start):
        return None
    suffix = _KEY_SUFFIX.match(text, word_end)
    if suffix is None:
        return None
    line_end = text.find("\n", suffix.end())
    value = text[suffix.end() : line_end if line_end >= 0 else len(text)]
    value = _COMMENT.sub("", value).strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    return value


def _collapse(raw: str) -> str:
    return " ".join(raw.split())


def _words(text: str) -> Iterator[int]:
    """Offsets of the word, standing alone (Markdown's ``_emphasis_`` may touch it)."""
    low = text.lower()
    if WORD not in low:
        return
    same = len(low) == len(text)
    hits = _WORD.finditer(low) if same else _WORD_ANY_CASE.finditer(text)
    size = len(text)
    for m in hits:
        start, end = m.start(), m.end()
        if (start and text[start - 1].isalnum()) or (end < size and text[end].isalnum()):
            continue  # unverified, verifiedly
        yield start


def _stamp(
    line: int, col: int, raw: str, source: str | None, d: _Date | None, *, key: bool = False
) -> Stamp:
    date, has_day = (d.date, d.has_day) if d else (None, False)
    return Stamp(line, col, _collapse(raw), source, date, date is None, has_day, key)


def _scan(text: str, yaml_through: int) -> list[Stamp]:
    stamps: list[Stamp] = []
    line, counted = 1, 0
    for start in _words(text):
        end = start + len(WORD)
        line += text.count("\n", counted, start)
        counted = start
        line_start = text.rfind("\n", 0, start) + 1
        col = start - line_start + 1
        value = _key_value(text, line_start, start, end) if line <= yaml_through else None
        if value is not None:
            raw = f"{text[start:end]}: {value}"
            stamps.append(_stamp(line, col, raw, None, _value_date(value), key=True))
            continue
        found = _prose(text, end)
        if found is not None:
            first, last, source, d = found
            stamps.append(_stamp(line, col, f"{text[start:end]} {text[first:last]}", source, d))
    return stamps


def find_stamps(text: str, *, yaml_like: bool = False) -> list[Stamp]:
    """Every stamp in ``text``, in order. With ``yaml_like`` (a YAML file, front matter), a
    ``verified:`` key line whose value is not a date is a malformed stamp; in prose it is one only
    when its value is date-shaped (``Verified: by hand`` is prose)."""
    return _scan(text, yaml_through=len(text) + 1 if yaml_like else 0)


def front_matter_end(text: str) -> int:
    """The line number of the ``---`` closing a leading front matter block, or 0 if none."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return 0
    m = _FRONT_MATTER_CLOSE.search(text, 4)
    return 0 if m is None else text.count("\n", 0, m.start()) + 1


def markdown_stamps(text: str) -> list[Stamp]:
    """Stamps in a Markdown file: its front matter is read as YAML, its body as prose."""
    return _scan(text, yaml_through=front_matter_end(text))


def age_in_months(stamp_date: dt.date, today: dt.date) -> int:
    """Whole calendar months from the stamp's month to today's (0 in the same month)."""
    return (today.year - stamp_date.year) * 12 + today.month - stamp_date.month


def is_future(stamp: Stamp, today: dt.date) -> bool:
    """Dated after today: a later month, or a later day when the stamp gives one."""
    if stamp.date is None:
        return False
    if stamp.has_day:
        return stamp.date > today
    return (stamp.date.year, stamp.date.month) > (today.year, today.month)
