"""The campaign's upkeep: what `campaign audit` reports on a schedule, not at commit time.

A stamp ages with the calendar, not with a change: at commit and push time only the files a
change touches are held to their stamps (checks/stale.py), and this audit reports the rest:
every stamp stale now, every stamp that goes stale within a window (so facts can be re-checked
a few at a time before they all expire in one month), and the standing checks, which no
commit triggers: the wrappers lock, the ledger's health, and jobs the ledger still shows
running (or unknown) for longer than their time limit allows.

The logic is pure: stamps, a folded ledger and findings in, an ``Audit`` out. ``gather``
(campaignops.gitops.upkeep.gather) reads the campaign; upkeep_render formats.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import layout
from campaignops.model import walltime
from campaignops.model.ledger import Job, Ledger, parse_time
from campaignops.model.stamps import Stamp, is_future

DEFAULT_DUE_WITHIN_DAYS = 30

CODES = code_table(
    Code(
        id="AUDIT001",
        message="the ledger's last line is torn ({reason}): a write was cut short",
        hint="nothing to restore: the next append starts a fresh line and readers skip the "
        "fragment; if a submission was in flight, run campaign status --refresh to find its job",
    ),
    Code(
        id="AUDIT002",
        message="ledger line {line} cannot be read ({reason})",
        hint="the ledger is written by campaignops only: restore the line from git "
        "(git log -p -- .campaign/ledger.jsonl), never edit it by hand",
    ),
    Code(
        id="AUDIT003",
        message="{what} is {state} in the ledger {elapsed} after {since}, past its time limit "
        "of {limit}",
        hint="run campaign status --refresh: the scheduler has ended it by now; if it no "
        "longer knows the job, the refresh records what it can (docs/runner.md, Audit)",
    ),
)

# States in which a job may still hold its allocation; None: an intent never answered, or a
# submission whose outcome was unknown (the job may exist).
_OPEN = frozenset({"RUNNING", "UNKNOWN"})


@dataclass(frozen=True)
class DueStamp:
    """One stamp to re-check: where, its text, the source it names (or its entry's), and the
    first day on which it is stale."""

    path: str
    line: int
    stamp: str
    source: str | None
    expires: dt.date

    def as_dict(self) -> dict[str, str | int | None]:
        return {"path": self.path, "line": self.line, "stamp": self.stamp, "source": self.source}


@dataclass(frozen=True)
class StampedFile:
    """A file's stamps, and the sources its YAML gives stamps that name none (by line)."""

    path: str
    stamps: tuple[Stamp, ...]
    sources: Mapping[int, str]


@dataclass(frozen=True)
class Audit:
    today: dt.date
    due_within_days: int
    stale_after_months: int
    stale: tuple[DueStamp, ...]
    due: tuple[DueStamp, ...]
    standing: tuple[Finding, ...]

    @property
    def horizon(self) -> dt.date:
        """The last day of the due window."""
        return horizon(self.today, self.due_within_days)

    @property
    def needs_action(self) -> bool:
        """Something is wrong now (exit 1): a stale stamp or a standing finding; stamps only
        due are a reminder."""
        return bool(self.stale or self.standing)


def expires(stamp_date: dt.date, limit_months: int) -> dt.date:
    """The first day a stamp of ``stamp_date`` is stale: the first of the month
    ``limit_months + 1`` months after its own (STALE001 fires when the age in whole calendar
    months exceeds the limit)."""
    index = stamp_date.year * 12 + stamp_date.month - 1 + limit_months + 1
    if index // 12 > dt.MAXYEAR:
        return dt.date.max  # past the calendar's end: never stale within it
    return dt.date(index // 12, index % 12 + 1, 1)


def horizon(today: dt.date, days: int) -> dt.date:
    """The last day of a due window of ``days`` from ``today`` (the calendar's end at most)."""
    try:
        return today + dt.timedelta(days=days)
    except OverflowError:
        return dt.date.max


def sort_stamps(
    files: Iterable[StampedFile], *, today: dt.date, limit_months: int, due_within_days: int
) -> tuple[tuple[DueStamp, ...], tuple[DueStamp, ...]]:
    """``(stale, due)``: stamps stale on ``today``, and those that turn stale within
    ``due_within_days`` after it. Undated and future stamps are neither (the STALE checks
    report them)."""
    last = horizon(today, due_within_days)
    stale: list[DueStamp] = []
    due: list[DueStamp] = []
    for found in files:
        for stamp in found.stamps:
            if stamp.date is None or is_future(stamp, today):
                continue
            until = expires(stamp.date, limit_months)
            if until > last:
                continue
            entry = DueStamp(
                path=found.path,
                line=stamp.line,
                stamp=stamp.raw,
                source=stamp.source or found.sources.get(stamp.line),
                expires=until,
            )
            (stale if until <= today else due).append(entry)
    order = operator.attrgetter("path", "line")
    return tuple(sorted(stale, key=order)), tuple(sorted(due, key=order))


def ledger_health(ledger: Ledger) -> list[Finding]:
    """A torn last line and every other line the fold skipped."""
    out: list[Finding] = []
    for skipped in ledger.skipped:
        code = CODES["AUDIT001"] if skipped.last else CODES["AUDIT002"]
        out.append(
            code.at(layout.LEDGER_FILE, skipped.line, reason=skipped.reason, line=skipped.line)
        )
    return out


def _hours(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def time_limit(job: Job) -> int | None:
    """The time limit each task may use, as the intent recorded it: ``time_s``, else (intents
    written before it was recorded) ``charge.time_s`` on a charged backend; None where none was
    recorded (the manifest's current ``time`` may have changed since: it is not a record)."""
    own = job.record.get("time_s")
    charge = job.record.get("charge")
    limit = (
        own if own is not None else charge.get("time_s") if isinstance(charge, Mapping) else None
    )
    ok = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
    return limit if ok else None


def _since(job: Job, target: str) -> tuple[str, dt.datetime] | None:
    """What a target's elapsed time counts from: a job of one target, its start, else its
    submission (or first record); an array task, its own recorded start only: the array's
    other tasks may have run before it, so the job's times say nothing of its clock."""
    if len(job.targets) > 1:
        tasks = job.record.get("tasks")
        index = job.index_of(target)
        own = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
        value = own.get("started") if isinstance(own, Mapping) else None
        started = parse_time(value) if isinstance(value, str) else None
        return ("it started", started) if started is not None else None
    for key, label in (("started", "it started"), ("submitted", "it was submitted")):
        if (when := parse_time(job.text(key))) is not None:
            return label, when
    first = parse_time(job.first_time)
    return ("it was submitted", first) if first is not None else None


def _open_state(job: Job, target: str) -> str | None:
    """The target's state when it may still run (RUNNING, UNKNOWN, or no answer: 'UNKNOWN
    (no scheduler answer recorded)'); None when it has ended, is pending or was refused."""
    if job.error is not None and job.job_id is None:
        return None  # refused at submission: no job ever existed
    task = job.task(target)
    state = task.state if task is not None else job.state
    if state is None:
        return "UNKNOWN (no scheduler answer recorded)"
    return state if state in _OPEN else None


def _overdue_tasks(job: Job, limit: int, now: dt.datetime) -> list[tuple[float, str, str, str]]:
    """``(elapsed s, target, state, since)`` of each of the job's targets past ``limit``."""
    late: list[tuple[float, str, str, str]] = []
    for target in job.targets:
        state = _open_state(job, target)
        since = _since(job, target) if state is not None else None
        if state is None or since is None:
            continue
        elapsed = (now - since[1]).total_seconds()
        if elapsed > limit:
            late.append((elapsed, target, state, since[0]))
    return late


def overdue(ledger: Ledger, *, now: dt.datetime) -> list[Finding]:
    """Jobs the ledger shows RUNNING or UNKNOWN longer after their start (or submission) than
    their recorded time limit: the scheduler has ended them, so the ledger is out of date, or
    the job was lost. From the ledger alone: no scheduler call. One finding per job, an
    array's told by its longest-late task and how many more there are."""
    out: list[Finding] = []
    for job in ledger.jobs:
        limit = time_limit(job)
        late = _overdue_tasks(job, limit, now) if limit is not None else []
        if not late or limit is None:
            continue
        elapsed, target, state, since = max(late, key=lambda t: t[0])
        name = job.job_id or job.ledger_id
        more = (
            f" and {len(late) - 1} more task{'s' if len(late) > 2 else ''}" if len(late) > 1 else ""
        )
        what = f"job {name} ({target}{more})" if len(job.targets) > 1 else f"job {name}"
        out.append(
            CODES["AUDIT003"].at(
                layout.LEDGER_FILE,
                job.first_line,
                what=what,
                state=state,
                elapsed=_hours(elapsed),
                since=since,
                limit=walltime.dhms(limit),
            )
        )
    return out


def audit(
    files: Iterable[StampedFile],
    *,
    ledger: Ledger,
    findings: Iterable[Finding],
    today: dt.date,
    now: dt.datetime,
    limit_months: int,
    due_within_days: int = DEFAULT_DUE_WITHIN_DAYS,
) -> Audit:
    """The whole audit: stamps sorted into stale and due, and the standing findings (the
    check findings given, the ledger's health, overdue jobs), sorted."""
    stale, due = sort_stamps(
        files, today=today, limit_months=limit_months, due_within_days=due_within_days
    )
    standing = {*findings, *ledger_health(ledger), *overdue(ledger, now=now)}
    return Audit(
        today=today,
        due_within_days=due_within_days,
        stale_after_months=limit_months,
        stale=stale,
        due=due,
        standing=tuple(sorted(standing)),
    )
