"""One job of the ledger and one target's task in it: the typed read of a folded record.

Below the fold (campaignops.model.ledger_fold), which builds them, and the per-target index
(campaignops.model.ledger_index), which summarises them; campaignops.model.ledger re-exports both.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
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

    @property
    def state_shown(self) -> str:
        """The job's state, or what the ledger says of a submission without one."""
        if self.state:
            return self.state
        if self.job_id:
            return "submitted"
        if self.error:
            return "submit failed"
        return "outcome unknown" if self.text("outcome") == "unknown" else "intent only"

    @property
    def open(self) -> bool:
        """May still change state: not refused at submission, and not known to have ended
        (a submission whose outcome is unknown counts until a refresh finds or rules it out)."""
        return not self.error and self.state not in FINISHED

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

    def _source(self, target: str) -> tuple[int, Mapping[str, Any] | None] | None:
        """Where ``target``'s outcome is read: its array index and the fields that hold it (its
        task's record, else the job's own: a job of one target, or a record from before
        per-task states), or None fields when its array has per-task records but none for it
        yet; None when the job does not run it."""
        index = self.index_of(target)
        if index is None:
            return None
        tasks = self.record.get("tasks")
        own = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
        if isinstance(own, Mapping) and isinstance(own.get("state"), str):
            return index, own
        if len(self.targets) == 1 or not isinstance(tasks, Mapping):
            return index, self.record
        return index, None

    def _unreported(self) -> str | None:
        # A task its array's records do not mention yet: as its job says, unless the job has
        # ended (then this task's end is not known: UNKNOWN).
        state = self.state
        return "UNKNOWN" if state in FINISHED else state

    def task(self, target: str) -> Task | None:
        """``target``'s own outcome in this job: its array task's record, else (a job of one
        target, or a record from before per-task states) the job's own fields."""
        found = self._source(target)
        if found is None:
            return None
        index, fields = found
        if fields is None:
            return Task(index=index, state=self._unreported())
        task = Task.of(index, fields)
        if fields is self.record:  # a job of one target: its task's entry holds only its tries
            tasks = self.record.get("tasks")
            own = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
            if isinstance(own, Mapping) and own.get("tries"):
                again = Task.of(index, own)
                return dataclasses.replace(task, attempt=again.attempt, tries=again.tries)
        return task

    def end(self, target: str) -> tuple[str | None, int | None] | None:
        """``target``'s state and exit code in this job, as ``task`` reads them without the
        rest of the task (what the per-target index keeps of every job); None when the job
        does not run it."""
        found = self._source(target)
        if found is None:
            return None
        _, fields = found
        if fields is None:
            return self._unreported(), None
        state = fields.get("state")
        return (state if isinstance(state, str) else None), _int(fields.get("exit_code"))

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

    def sort_key(self) -> tuple[dt.datetime, int, str]:
        """Submission time (the first record's time until one is known), then the attempt, then
        ledger_id. Times have whole seconds (a scheduler's stamp): a retry submitted within the
        second of the job it retries must still come after it, or the index, the retry rule and
        ``--failed`` read the old failure as the target's latest and submit it again (a random
        ledger id put it first about one time in two). ``attempt`` is LIGHT: no record decoded."""
        when = parse_time(self.text("submitted")) or parse_time(self.first_time)
        attempt = self.record.get("attempt")
        n = attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 1
        return (when or _NEVER, n, self.ledger_id)

    def shown_key(self) -> tuple[dt.datetime, tuple[tuple[int, int | str], ...]]:
        """How views order jobs: by submission time, then by job id read naturally (``old2``
        before ``old10``; the ledger id when there is no job id)."""
        return (self.sort_key()[0], natural_key(self.job_id or self.ledger_id))


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
    # A box executor's retries within the job (its oom_retry): this attempt's number, and each
    # earlier attempt it ran again, oldest first (docs/formats.md, the ledger's ``tries``).
    attempt: int | None = None
    tries: tuple[Task, ...] = ()

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
            attempt=_int(fields.get("attempt")),
            tries=_tries(index, fields.get("tries")),
        )

    @property
    def succeeded(self) -> bool:
        return succeeded(self.state, self.exit_code)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED


def _tries(index: int, value: object) -> tuple[Task, ...]:
    """The recorded ``tries`` (a list of task entries), each read as a task; tries nested in
    one are not read (an earlier attempt has none, and a crafted line must not recurse)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        Task.of(index, {k: v for k, v in one.items() if k != "tries"})
        for one in value
        if isinstance(one, Mapping)
    )


def succeeded(state: str | None, exit_code: int | None) -> bool:
    """A task's end that counts as success: COMPLETED, with exit code 0 or none recorded."""
    return state == "COMPLETED" and exit_code in (0, None)


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


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """``text`` as a key that orders its runs of digits by number: ``job9`` before ``job10``,
    ``4242_3`` before ``4242_12`` (each part tagged so numbers and words always compare)."""
    # split() with a group alternates text (even places) and digits (odd places).
    return tuple(
        (1, int(part)) if n % 2 else (0, part) for n, part in enumerate(_DIGITS.split(text)) if part
    )


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
