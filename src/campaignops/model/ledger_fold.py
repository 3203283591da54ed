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

import datetime as dt
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from campaignops.model.states import FINISHED

STAGES = ("smoke", "single", "production")


@dataclass(frozen=True)
class Skipped:
    """A ledger line that was not read: its 1-based number, why, and whether it was the last."""

    line: int
    reason: str
    last: bool


@dataclass(frozen=True)
class Job:
    """One submission: the fold of every record sharing its ledger_id, with typed accessors."""

    ledger_id: str
    record: Mapping[str, Any]
    first_line: int
    first_time: str | None

    def text(self, key: str) -> str | None:
        value = self.record.get(key)
        return value if isinstance(value, str) else None

    def number(self, key: str) -> float | None:
        return _number(self.record.get(key))

    @property
    def job_id(self) -> str | None:
        return self.text("job_id")

    @property
    def kind(self) -> str | None:
        return self.text("kind")

    @property
    def stage(self) -> str | None:
        return self.text("stage")

    @property
    def backend(self) -> str | None:
        return self.text("backend")

    @property
    def state(self) -> str | None:
        return self.text("state")

    @property
    def commit(self) -> str | None:
        return self.text("commit")

    @property
    def error(self) -> str | None:
        return self.text("error")

    @functools.cached_property
    def targets(self) -> tuple[str, ...]:
        # Cached (a frozen job's record does not change): gates ask once per job and target.
        value = self.record.get("targets")
        if isinstance(value, list):
            return tuple(t for t in value if isinstance(t, str))
        return ()

    @functools.cached_property
    def _indices(self) -> Mapping[str, int]:
        # Built backwards so a repeated target keeps its first place (tuple.index's answer).
        targets = self.targets
        return dict(zip(reversed(targets), range(len(targets) - 1, -1, -1), strict=True))

    @property
    def exit_code(self) -> int | None:
        return _int(self.record.get("exit_code"))

    def index_of(self, target: str) -> int | None:
        """The array index that runs ``target`` (its place in ``targets``), or None."""
        return self._indices.get(target)

    def task(self, target: str) -> Task | None:
        """``target``'s own outcome in this job: its array task's record, else (a job of one
        target, or a record from before per-task states) the job's own fields."""
        index = self.index_of(target)
        if index is None:
            return None
        tasks = self.record.get("tasks")
        own = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
        if isinstance(own, Mapping) and isinstance(own.get("state"), str):
            return Task.of(index, own)
        if len(self.targets) == 1 or not isinstance(tasks, Mapping):
            return Task.of(index, self.record)
        # An array with per-task records that has none for this task yet: as its job says,
        # unless the job has ended (then this task's end is not known: UNKNOWN).
        state = self.state
        return Task(index=index, state="UNKNOWN" if state in FINISHED else state)

    def target_fingerprint(self, target: str) -> str | None:
        """The fingerprint ``target`` had when this job was submitted, where it is recorded
        per target (or the job has one target)."""
        by_target = self.record.get("fingerprints")
        if isinstance(by_target, Mapping) and isinstance(by_target.get(target), str):
            return str(by_target[target])
        return self.text("fingerprint") if self.targets == (target,) else None

    def queue_wait(self) -> float | None:
        """Seconds between submission and start: recorded, else derived from the timestamps."""
        return _duration(self.number("queue_wait_s"), self.text("submitted"), self.text("started"))

    def run_time(self) -> float | None:
        """Seconds between start and end: recorded, else derived from the timestamps."""
        return _duration(self.number("run_time_s"), self.text("started"), self.text("ended"))

    def sort_key(self) -> tuple[dt.datetime, str]:
        """Submission time (the first record's time until one is known), then ledger_id."""
        when = parse_time(self.text("submitted")) or parse_time(self.first_time)
        return (when or _NEVER, self.ledger_id)


@dataclass(frozen=True)
class Task:
    """One target's outcome within a job: its array task's state, exit code, times, usage."""

    index: int
    state: str | None
    exit_code: int | None = None
    reason: str | None = None
    signature: str | None = None
    started: str | None = None
    ended: str | None = None
    run_time_s: float | None = None
    max_rss: str | None = None
    req_mem: str | None = None
    cpu_time_s: float | None = None  # sacct TotalCPU: every CPU's time together
    alloc_cpus: int | None = None
    alloc_gpus: int | None = None
    # What ``campaign status --refresh`` diagnosed from the task's log and verdict (recorded as
    # ``"diagnosis": {"entry": id|null, "category": category|null}``): the catalog entry id and
    # its category; both None when nothing matched or the task was never diagnosed.
    entry: str | None = None
    category: str | None = None
    # campaign pull's verdict on the task's outputs (ssh backends): "verified", or what is wrong.
    pulled: str | None = None

    @classmethod
    def of(cls, index: int, fields: Mapping[str, Any]) -> Task:
        def text(key: str) -> str | None:
            value = fields.get(key)
            return value if isinstance(value, str) else None

        run, cpu = _number(fields.get("run_time_s")), _number(fields.get("cpu_time_s"))
        found = fields.get("diagnosis")
        diagnosis: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        entry, category = diagnosis.get("entry"), diagnosis.get("category")
        return cls(
            index=index,
            state=text("state"),
            exit_code=_int(fields.get("exit_code")),
            reason=text("reason"),
            signature=text("signature"),
            started=text("started"),
            ended=text("ended"),
            run_time_s=run if run is not None and run >= 0 else None,
            max_rss=text("max_rss"),
            req_mem=text("req_mem"),
            cpu_time_s=cpu if cpu is not None and cpu >= 0 else None,
            alloc_cpus=_int(fields.get("alloc_cpus")),
            alloc_gpus=_int(fields.get("alloc_gpus")),
            entry=entry if isinstance(entry, str) else None,
            category=category if isinstance(category, str) else None,
            pulled=text("pulled"),
        )

    @property
    def succeeded(self) -> bool:
        return self.state == "COMPLETED" and self.exit_code in (0, None)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def _number(value: object) -> float | None:
    """A finite number as a float, else None (an integer too big for a float, 10**400, too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Ledger:
    jobs: tuple[Job, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    by_id: Mapping[str, Job] = field(default_factory=lambda: MappingProxyType({}))


# Jobs whose times cannot be read sort after every dated one, still ordered by ledger_id.
_NEVER = dt.datetime.max.replace(tzinfo=dt.timezone.utc)


def parse_time(value: str | None) -> dt.datetime | None:
    """An RFC 3339 timestamp as an aware datetime (naive ones taken as UTC), else None."""
    if not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _duration(recorded: float | None, start: str | None, end: str | None) -> float | None:
    if recorded is not None:
        return recorded if recorded >= 0 else None
    begin, finish = parse_time(start), parse_time(end)
    if begin is None or finish is None or finish < begin:
        return None
    return (finish - begin).total_seconds()


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


def _merge(target: dict[str, Any], rec: Mapping[str, Any]) -> None:
    """Fold one record into its job's fields (which the fold owns, so it updates in place:
    copying a 1,000-task map for every state record made the fold quadratic)."""
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
                        (k, v)
                        for k, v in fields.items()
                        if v is not None and not (v.__class__ is float and not math.isfinite(v))
                    )
                    tasks[index] = base
            target["tasks"] = tasks
        else:
            target[key] = value  # replaced whole, never edited: shared with the record


def _own(value: object) -> dict[str, Any]:
    # A map the fold made is its own to update; anything else is copied (or, not a map, reset).
    if isinstance(value, dict):
        return value
    return dict(value) if isinstance(value, Mapping) else {}


def fold(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Merge records by ledger_id in file order: later non-null fields override earlier ones."""
    merged: dict[str, dict[str, Any]] = {}
    for rec in records:
        _merge(merged.setdefault(str(rec["ledger_id"]), {}), rec)
    return merged


@dataclass
class Folding:
    """A fold in progress: what the lines read so far add up to. ``feed`` continues it with
    the lines that follow (the same result as folding all the lines at once), which is how a
    snapshot of a ledger's prefix is brought up to date by reading only its tail.

    ``jobs`` holds the fields of jobs this fold may still update; ``kept`` those already handed
    out in a Ledger (read-only: a job the tail touches again is copied back into ``jobs``, so
    a Ledger once returned never changes), or read lazily from a snapshot.
    """

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    first: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0

    def copy(self) -> Folding:
        return Folding(
            jobs={lid: _thaw(f) for lid, f in self.jobs.items()},
            kept=dict(self.kept),
            first=dict(self.first),
            skipped=list(self.skipped),
            lines=self.lines,
        )

    def feed(self, text: str) -> None:
        """Fold ``text``: the lines that follow those read so far (the last may be torn)."""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        # Most ledgers are all UTF-8: look for undecodable bytes once, not on every line.
        check = _UNDECODABLE.search(text) is not None
        for number, raw in enumerate(lines, start=self.lines + 1):
            line = raw.strip()
            if not line:
                continue
            rec, reason = _record(line, check=check)
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
            _merge(job, rec)
        self.lines += len(lines)

    def freeze(self) -> None:
        """Make every job read-only (``kept``): a later ``feed`` copies what it updates."""
        for lid, fields in self.jobs.items():
            self.kept[lid] = MappingProxyType(fields)
        self.jobs.clear()

    def ledger(self) -> Ledger:
        """The jobs so far, sorted by submission time, then ledger_id (jobs whose times cannot
        be read last). The fold keeps going after this without changing the Ledger."""
        self.freeze()
        jobs = [
            Job(ledger_id=lid, record=self.kept[lid], first_line=line, first_time=time)
            for lid, (line, time) in self.first.items()
        ]
        jobs.sort(key=Job.sort_key)
        skipped = (Skipped(line=n, reason=r, last=n == self.lines) for n, r in self.skipped)
        return Ledger(
            jobs=tuple(jobs),
            skipped=tuple(skipped),
            by_id=MappingProxyType({j.ledger_id: j for j in jobs}),
        )


def _thaw(fields: Mapping[str, Any]) -> dict[str, Any]:
    # A job's fields as the fold's own again: the map and its task entries (the only parts
    # the fold updates in place) are copied; the rest is replaced whole, so shared.
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
