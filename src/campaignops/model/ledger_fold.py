"""The ledger's records folded into one job per ledger_id (campaignops.model.ledger reads the file).

The fold is the shared piece below both readers: ``ledger`` (the public face, and ``read``)
and ``ledger_snapshot`` (the fold kept across processes) build on it, so neither imports the
other in a circle.

A submission appends an intent record before the scheduler call and a result record after it;
status refreshes append state records. All records of one submission share a ``ledger_id``, and
a later record's non-null fields override the earlier ones (a null never erases what is known).

Reading never fails on content: a line that is not UTF-8 or not a JSON object with a string
``ledger_id`` is skipped and reported in ``Ledger.skipped``; a number that is not finite
(``1e999``, ``NaN``) reads as absent, like a null. The last line is the expected
casualty of a crash in mid-append (a torn write); a complete record whose newline alone is
missing is still read.
"""

from __future__ import annotations

import codecs
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from campaignops.model.ledger_index import Before, Index
from campaignops.model.ledger_job import STAGES as STAGES
from campaignops.model.ledger_job import Job as Job
from campaignops.model.ledger_job import Skipped as Skipped
from campaignops.model.ledger_job import Task as Task
from campaignops.model.ledger_job import parse_time as parse_time
from campaignops.model.ledger_packed import Packed

# A cold read packs the jobs it has folded every this many lines (Folding.freeze): a year of
# them as dicts was most of its peak memory. A job a later line updates is unpacked again.
PACK_EVERY = 4096


@dataclass(frozen=True)
class Ledger:
    jobs: Sequence[Job] = ()
    skipped: tuple[Skipped, ...] = ()
    by_id: Mapping[str, Job] = field(default_factory=lambda: MappingProxyType({}))
    # The per-target index of ``jobs`` (campaignops.model.ledger_index), kept with the fold;
    # None when built without one (ledger_index.of builds it from the jobs then).
    index: Index | None = field(default=None, compare=False, repr=False)


def _record(line: str, *, check: bool = True) -> tuple[dict[str, Any] | None, str]:
    if check and _UNDECODABLE.search(line):
        return None, "not valid UTF-8"
    try:
        data = json.loads(line)
    except ValueError:  # JSONDecodeError, and numbers too long to convert
        return None, "not valid JSON"
    except RecursionError:
        return None, "JSON nests too deeply"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    if not isinstance(data.get("ledger_id"), str) or not data["ledger_id"]:
        return None, "record has no ledger_id"
    return data, ""


# Bytes that were not UTF-8, as decode(errors="surrogateescape") keeps them.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


def decode(data: bytes) -> str:
    """Ledger bytes as text; a line that is not UTF-8 (a write torn inside a character) stays
    undecodable on its own and is skipped by ``parse``, not fatal for the whole ledger."""
    return data.decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")


def _merge(target: dict[str, Any], rec: Mapping[str, Any], words: dict[str, str]) -> None:
    """Fold one record into its job's fields (which the fold owns, so it updates in place:
    copying a 1,000-task map for every state record made the fold quadratic). Keys and string
    values are taken through ``words``, so equal ones are one object: JSON decodes each line's
    keys anew, and a year of jobs repeats the same few states, stages and fingerprints."""
    for key, value in rec.items():
        # A non-finite number (1e999, NaN: valid to Python's JSON) is absent, like a null.
        if value is None or (value.__class__ is float and not math.isfinite(value)):
            continue
        if key == "tasks" and isinstance(value, Mapping):
            # Per-task records merge task by task, field by field, like whole records.
            tasks = _own(target.get("tasks"))
            for index, fields in value.items():
                if isinstance(fields, Mapping):
                    base = _own(tasks.get(index))
                    base.update(
                        (_word(k, words), _shared(v, words))
                        for k, v in fields.items()
                        if v is not None and not (v.__class__ is float and not math.isfinite(v))
                    )
                    tasks[_word(index, words)] = base
            target["tasks"] = tasks
        else:
            # Replaced whole, never edited: shared with the record (or its compact copy).
            target[_word(key, words)] = _shared(value, words)


def _word(text: str, words: dict[str, str]) -> str:
    return words.setdefault(text, text)


def _shared(value: Any, words: dict[str, str]) -> Any:
    """``value`` with its strings (and its maps' keys), one level down, taken from ``words``:
    what a job keeps of a record is mostly short strings that other jobs repeat."""
    kind = value.__class__
    if kind is str:
        return words.setdefault(value, value)
    if kind is dict:
        return {
            words.setdefault(k, k): words.setdefault(v, v) if v.__class__ is str else v
            for k, v in value.items()
        }
    if kind is list:
        return [words.setdefault(v, v) if v.__class__ is str else v for v in value]
    return value


def _own(value: object) -> dict[str, Any]:
    # A map the fold made is its own to update; anything else is copied (or, not a map, reset).
    if isinstance(value, dict):
        return value
    return dict(value) if isinstance(value, Mapping) else {}


def fold(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Merge records by ledger_id in file order: later non-null fields override earlier ones."""
    merged: dict[str, dict[str, Any]] = {}
    words: dict[str, str] = {}
    for rec in records:
        _merge(merged.setdefault(str(rec["ledger_id"]), {}), rec, words)
    return merged


@dataclass
class Folding:
    """A fold in progress: what the lines read so far add up to. ``feed`` continues it with
    the lines that follow (the same result as folding all the lines at once), which is how a
    snapshot of a ledger's prefix is brought up to date by reading only its tail.

    ``jobs`` holds the fields of jobs this fold may still update; ``kept`` those already handed
    out in a Ledger (read-only: a job the tail touches again is copied back into ``jobs``, so
    a Ledger once returned never changes), or read lazily from a snapshot.

    ``index`` is the per-target index of the jobs as of the last ``ledger`` (None until one is
    built or loaded); ``touched`` the jobs fed since then, each with the targets it had before
    (none: new), which the next ``ledger`` puts into a new index.
    """

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    first: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0
    index: Index | None = None
    touched: dict[str, Before | None] = field(default_factory=dict)
    order: list[str] | None = None  # the ledger ids in submission order, as of the last ledger

    def copy(self) -> Folding:
        return Folding(
            jobs={lid: _thaw(f) for lid, f in self.jobs.items()},
            kept=dict(self.kept),
            first=dict(self.first),
            skipped=list(self.skipped),
            lines=self.lines,
            index=self.index,
            touched=dict(self.touched),
            order=self.order,
        )

    def feed(self, data: str | bytes) -> None:
        """Fold ``data``: the lines that follow those read so far (the last may be torn). Bytes
        (the ledger file's) are decoded a line at a time: a year's ledger is tens of MiB, and
        its text and its list of lines besides it were most of a cold read's peak memory."""
        words: dict[str, str] = {}  # for this feed only: what it shares is kept by the jobs
        number = self.lines
        for raw in _lines(data, bom=not self.lines):
            number += 1
            line = (raw if isinstance(raw, str) else raw.decode("utf-8", "surrogateescape")).strip()
            if not line:
                continue
            # Undecodable bytes are kept as surrogates, never in an ASCII line.
            rec, reason = _record(line, check=not line.isascii())
            if rec is None:
                self.skipped.append((number, reason))
                continue
            lid = rec["ledger_id"]
            if lid not in self.first:
                time = rec.get("time")
                self.first[lid] = (number, time if isinstance(time, str) else None)
            job = self.jobs.get(lid)
            if job is None:
                kept = self.kept.pop(lid, None)
                job = self.jobs[lid] = {} if kept is None else _thaw(kept)
                if lid not in self.touched:  # as it was: the thawed copy, not yet merged into
                    self.touched[lid] = self._before(lid, None if kept is None else job)
            _merge(job, rec, words)
            if number % PACK_EVERY == 0:
                self.freeze()  # what a cold read holds stays packed while it reads on
                words.clear()  # packed, the jobs keep few of the strings it shared
        self.lines = number

    def _before(self, lid: str, kept: Mapping[str, Any] | None) -> Before | None:
        """A job as the index saw it before this fold step changed it (None: a new one)."""
        if kept is None or self.index is None:
            return None
        line, time = self.first[lid]
        job = Job(ledger_id=lid, record=kept, first_line=line, first_time=time)
        pairs = tuple((t, job.target_fingerprint(t)) for t in dict.fromkeys(job.targets))
        return Before(pairs=pairs, key=job.sort_key(), counted=(job.stage, job.state_shown))

    def freeze(self) -> None:
        """Make every job read-only and compact (``kept``, Packed): a later ``feed`` copies
        back what it updates."""
        for lid, fields in self.jobs.items():
            self.kept[lid] = Packed.of(fields)
        self.jobs.clear()

    def ledger(self) -> Ledger:
        """The jobs so far, sorted by submission time, then ledger_id (jobs whose times cannot
        be read last). The fold keeps going after this without changing the Ledger. Its jobs
        are made on first use (a command asks about a few of a year's 25,000)."""
        self.freeze()
        made = _Made(dict(self.first), dict(self.kept))
        self.order = _sorted(made, self.order, self.touched)
        skipped = (Skipped(line=n, reason=r, last=n == self.lines) for n, r in self.skipped)
        if self.index is None:  # every job looked into once, none kept decoded
            self.index = Index.build(map(made.fresh, self.order))
        elif self.touched:
            changed = ((made.job(lid), before) for lid, before in self.touched.items())
            self.index = self.index.updated(changed, key=lambda lid: made.job(lid).sort_key())
        self.touched.clear()
        return Ledger(
            jobs=_Jobs(self.order, made),
            skipped=tuple(skipped),
            by_id=made,
            index=self.index,
        )


class _Made(Mapping[str, Job]):
    """A Ledger's jobs by ledger id, each made on first use from the fold's fields as they were
    when the Ledger was made, then kept (the same Job every time)."""

    def __init__(
        self, first: dict[str, tuple[int, str | None]], kept: dict[str, Mapping[str, Any]]
    ) -> None:
        self._first = first
        self._kept = kept
        self._jobs: dict[str, Job] = {}

    def job(self, lid: str) -> Job:
        found = self._jobs.get(lid)
        if found is None:
            line, time = self._first[lid]
            found = self._jobs[lid] = Job(
                ledger_id=lid, record=self._kept[lid], first_line=line, first_time=time
            )
        return found

    def fresh(self, lid: str, *, whole: bool = True) -> Job:
        """The job for one look, not kept: its record decoded for it alone (``whole``), or
        as kept (a look at LIGHT fields only decodes nothing)."""
        found = self._jobs.get(lid)
        if found is not None:
            return found
        line, time = self._first[lid]
        fields = self._kept[lid]
        record = fields.unpacked() if whole and isinstance(fields, Packed) else fields
        return Job(ledger_id=lid, record=record, first_line=line, first_time=time)

    def __getitem__(self, lid: str) -> Job:
        if lid not in self._first:
            raise KeyError(lid)
        return self.job(lid)

    def get(self, lid: str, default: Any = None) -> Any:
        return self.job(lid) if lid in self._first else default

    def __contains__(self, lid: object) -> bool:
        return lid in self._first

    def __iter__(self) -> Iterator[str]:
        return iter(self._first)

    def __len__(self) -> int:
        return len(self._first)


class _Jobs(Sequence[Job]):
    """A Ledger's jobs in submission order, made on first use (``_Made``)."""

    def __init__(self, order: list[str], made: _Made) -> None:
        self._order = order
        self._made = made

    @overload
    def __getitem__(self, at: int) -> Job: ...
    @overload
    def __getitem__(self, at: slice) -> tuple[Job, ...]: ...
    def __getitem__(self, at: int | slice) -> Job | tuple[Job, ...]:
        if isinstance(at, slice):
            return tuple(map(self._made.job, self._order[at]))
        return self._made.job(self._order[at])

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Job]:
        return map(self._made.job, self._order)

    def __reversed__(self) -> Iterator[Job]:
        return map(self._made.job, reversed(self._order))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[Job]) -> tuple[Job, ...]:
        return (*self, *other)  # as a Ledger's tuple of jobs was

    def __radd__(self, other: Sequence[Job]) -> tuple[Job, ...]:
        return (*other, *self)


def _sorted(jobs: _Made, order: list[str] | None, touched: Iterable[str]) -> list[str]:
    """The ledger ids of ``jobs`` in submission order: sorted whole the first time; after that
    ``order`` (the previous one) with only the ``touched`` jobs (new, or with a new record that
    may have moved them) taken out and put back in their place, so a read of a 25,000-job
    ledger does not parse every job's time again."""
    if order is None:
        # Each job's sort key once, from its LIGHT fields; the jobs are made on use, later.
        return sorted(jobs, key=lambda lid: jobs.fresh(lid, whole=False).sort_key())
    moved = set(touched)
    kept = [lid for lid in order if lid not in moved]
    for lid in sorted(moved, key=lambda lid: jobs.job(lid).sort_key()):
        mine = jobs.job(lid).sort_key()
        n = len(kept)  # from the end: new and refreshed jobs are mostly the latest ones
        while n and jobs.job(kept[n - 1]).sort_key() > mine:
            n -= 1
        kept.insert(n, lid)
    return kept


def _lines(data: str | bytes, *, bom: bool) -> Iterator[str | bytes]:
    """``data``'s lines, one at a time (the last one too when no newline ends it); bytes from
    a file's start lose a UTF-8 byte order mark, as ``decode`` drops it."""
    if isinstance(data, str):
        pieces = data.split("\n")  # text is what tests and a torn last line pass: small
        if pieces[-1] == "":
            pieces.pop()
        yield from pieces
        return
    stream = io.BytesIO(data)  # shares the bytes: nothing is copied but each line
    if bom and data.startswith(codecs.BOM_UTF8):
        stream.seek(len(codecs.BOM_UTF8))
    yield from stream


def _thaw(fields: Mapping[str, Any]) -> dict[str, Any]:
    # A job's fields as the fold's own again: the map and its task entries (the only parts
    # the fold updates in place) are copied; the rest is replaced whole, so shared.
    if isinstance(fields, Packed):
        return fields.unpacked()  # decoded anew: its own already
    own = dict(fields)
    tasks = own.get("tasks")
    if isinstance(tasks, Mapping):
        own["tasks"] = {i: dict(t) if isinstance(t, Mapping) else t for i, t in tasks.items()}
    return own


def parse(text: str) -> Ledger:
    """Fold the ledger's text into jobs sorted by submission time, then ledger_id."""
    folding = Folding()
    folding.feed(text)
    return folding.ledger()
