"""`campaign status`: refresh unfinished jobs with one batched query per backend.

For each backend in the ledger: one query call set (`query_argvs`, e.g. sacct + squeue) for all
its unfinished jobs, whatever their number. State changes are appended to the ledger as state
records; STATUS.md's views are re-rendered. An intent without a result (a crash between the two
writes) is looked up by its job name among the scheduler's jobs (the comment carries its
ledger id) and its result recorded.

`watch` repeats `refresh` until every job has finished, at least ``WATCH_MIN_S`` apart: a job
rarely changes state faster than that, and a tighter loop is the squeue/sacct hammering that
cluster admins ban (the seeds' "never a polling loop"). Only local jobs, whose state is files on
this machine, are looked at more often (runner/watchpace.py).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.core import yamldoc
from campaignops.core.errors import CampaignError, UsageError
from campaignops.learn.diagnosis.tasks import Diagnosers
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState
from campaignops.runner import answered, elsewhere, retry, submit, submitlock, watchpace
from campaignops.views import render as views

Call = Callable[[Sequence[str]], scheduler.Call]
WATCH_MIN_S = 60.0
WATCH_MAX_S = 86400.0

# An unresolved submission younger than this may still be in its scheduler call (another
# process is submitting it): it is looked up, but not yet declared never queued.
NEVER_QUEUED_AFTER_S = 300.0


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


@dataclass(frozen=True)
class Refresh:
    queries: int  # scheduler calls made
    changed: tuple[str, ...]  # ledger ids with a new state record
    reconciled: tuple[str, ...]  # ledger ids whose lost or unknown result was found
    ruled_out: tuple[str, ...] = ()  # ledger ids the scheduler never queued
    retried: tuple[str, ...] = ()  # oom_retry retries submitted: job names
    retry_waiting: int = 0  # retries whose delay has not passed yet
    retry_refused: tuple[str, ...] = ()  # retries a gate refused: what and why
    # Why a backend left tasks UNKNOWN (an unreachable box, an unusable answer), and an ssh
    # link with no shared connection: one line each, never recorded in the ledger.
    unanswered: tuple[str, ...] = ()
    # ssh placements the backend page does not vouch for (never connected to): where and why
    unvouched: tuple[str, ...] = ()


def refresh(
    *,
    root: Path,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Refresh:
    # Serialised (submitlock.refreshing), and the ledger read inside the lock: concurrent
    # refreshes of one finished job append its end once.
    with submitlock.refreshing(root):
        return _refresh(root=root, now=now, call=call)


class _Counted:
    """The scheduler calls a refresh makes, counted (Refresh.queries)."""

    def __init__(self) -> None:
        self.calls = 0

    def wrap(self, run: Call) -> Call:
        def counted(argv: Sequence[str]) -> scheduler.Call:
            self.calls += 1
            return run(argv)

        return counted


@dataclass
class _Round:
    """What one refresh gathers over its backends (filled backend by backend, then recorded)."""

    claimed: set[str]  # job ids a ledger record already holds: a lost submission's match is new
    records: list[dict[str, object]] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    unvouched: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Asking:
    """One backend as a refresh asks it: its name, the backend, its kind's hooks, the counted
    call, the diagnosers, the clock."""

    name: str
    be: backends.Backend
    kind: backends.Kind | None
    call: Call
    diagnosers: Diagnosers
    now: Callable[[], dt.datetime]


def _lost(asking: _Asking, lost: Sequence[ledger.Job], found: _Round) -> None:
    """Submissions whose result was lost: found among the scheduler's jobs by name (their
    result and state recorded), else, once old enough, recorded as never queued."""
    be, now = asking.be, asking.now
    names = sorted({str(j.text("name")) for j in lost if j.text("name")})
    known = be.lookup(names, asking.call) if names else {}
    for j in lost:
        match = answered.match(j, known, found.claimed)
        if match is not None:
            found.claimed.add(match.job_id)
            diagnoser = asking.diagnosers.of(j, match.job_id, asking.name, be)
            state, entries = answered.judge(j, match, diagnoser)
            found.records.append(
                lw.result_record(ledger_id=j.ledger_id, time=now(), job_id=match.job_id)
            )
            found.records.append(answered.state_record(j, state, entries, now(), diagnoser))
            found.reconciled.append(j.ledger_id)
            continue
        since = ledger.parse_time(j.first_time)
        if since is not None and (now() - since).total_seconds() >= NEVER_QUEUED_AFTER_S:
            found.records.append(
                lw.result_record(
                    ledger_id=j.ledger_id,
                    time=now(),
                    job_id=None,
                    error="never queued: the scheduler holds no job of this submission",
                )
            )
            found.ruled_out.append(j.ledger_id)


def _queried(root: Path, asking: _Asking, ids: Mapping[str, ledger.Job], found: _Round) -> None:
    """ONE query set for the backend's recorded jobs; each state change becomes a record."""
    be, kind = asking.be, asking.kind
    if kind is not None:
        found.unvouched += kind.refusals(root, ids)
    outputs = [asking.call(a).stdout for a in be.query_argvs(sorted(ids))]
    states: dict[str, JobState] = be.parse_states(outputs)
    found.unanswered += _unanswered(asking.name, [states[i] for i in sorted(ids) if i in states])
    if kind is not None and kind.query_warning is not None:
        found.unanswered.append(kind.query_warning() or "")
    for job_id, job in ids.items():
        seen = states.get(job_id)
        if seen is None or seen.state == "UNKNOWN":
            # The backend does not know the job (another clone's local job, a purged id):
            # that says nothing of it, and must not overwrite what the ledger knows.
            continue
        diagnoser = asking.diagnosers.of(job, job_id, asking.name, be)
        state, entries = answered.judge(job, seen, diagnoser)
        same = state.state == job.state and state.exit_code == job.record.get("exit_code")
        if same and not entries:
            continue
        found.records.append(
            answered.state_record(job, state, entries, asking.now(), None if same else diagnoser)
        )
        found.changed.append(job.ledger_id)


def _refresh(
    *,
    root: Path,
    now: Callable[[], dt.datetime],
    call: Call,
) -> Refresh:
    history = ledger.read(root)
    by_backend: dict[str, list[ledger.Job]] = {}
    for job in ledger.live(history):  # the index's live jobs: answered.is_open, every one
        by_backend.setdefault(job.text("backend") or "local", []).append(job)
    counted = _Counted()
    diagnosers = Diagnosers(root)
    lost = any(not j.job_id for jobs in by_backend.values() for j in jobs)
    # Every job id a record holds: only a lost submission's match needs them.
    found = _Round(claimed={j.job_id for j in history.jobs if j.job_id} if lost else set())
    for name, jobs in sorted(by_backend.items()):
        page = backends.page(root, name)
        be = backends.for_page(name, page, root=root)
        asking = _Asking(
            name=name,
            be=be,
            kind=backends.kind_of(page),
            call=counted.wrap(backends.calling(be, call)),
            diagnosers=diagnosers,
            now=now,
        )
        _lost(asking, [j for j in jobs if not j.job_id], found)
        ids = {str(j.job_id): j for j in jobs if j.job_id}
        if ids:
            _queried(root, asking, ids, found)
    if found.records:
        lw.append(root, found.records)
    retried, waiting, refused = _retry_oom(root=root, now=now, call=call)
    views.render_all(root=root, write=True)
    return Refresh(
        queries=counted.calls,
        changed=tuple(found.changed),
        reconciled=tuple(found.reconciled),
        ruled_out=tuple(found.ruled_out),
        retried=retried,
        retry_waiting=waiting,
        retry_refused=refused,
        unanswered=tuple(dict.fromkeys(w for w in found.unanswered if w)),
        unvouched=tuple(found.unvouched),
    )


def _unanswered(backend: str, states: Sequence[JobState]) -> list[str]:
    """Each distinct reason the backend gave for a job or task it answered UNKNOWN."""
    found = []
    for job in states:
        for one in (job, *job.tasks.values()):
            if one.state == "UNKNOWN" and one.reason:
                found.append(f"{backend}: {one.reason}")
    return found


def _manifest(root: Path, rel: str) -> Any:
    try:
        return yamldoc.load((root / rel).read_text(encoding="utf-8"), path=rel)
    except (OSError, UnicodeDecodeError, CampaignError):
        return None  # a manifest gone or broken asks for no retry; campaign check says why


def _retried_itself(root: Path, job: ledger.Job) -> bool:
    """The job's own executor already retried its OOM (manifest oom_retry on a box executor)."""
    kind = backends.kind_named(root, job.backend or "local")
    return kind is not None and kind.retries_oom_itself(job.job_id or "")


def _retry_oom(
    *, root: Path, now: Callable[[], dt.datetime], call: Call
) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """Submit the oom_retry retries that are due (runner/retry.py: a host or GPU OOM, a
    preemption; a host OOM's with its memory raised), through the same
    gates as any submission. Returns what was submitted, how many wait for their delay, and
    what a gate refused (tried again at the next refresh)."""
    due, waiting = retry.pending(
        ledger.latest_jobs(ledger.read(root)),
        manifest=lambda rel: _manifest(root, rel),
        now=now(),
        retried_itself=lambda job: _retried_itself(root, job),
    )
    submitted: list[str] = []
    refused: list[str] = []
    for entry in due:
        try:
            outcome = submit.submit(
                root=root,
                ask=submit.Ask(
                    manifest=entry.manifest,
                    stage=entry.stage,
                    targets=entry.targets,
                    backend=entry.backend,
                ),
                retry=submit.Retry(
                    attempt=entry.attempt,
                    of=entry.of,
                    mem_factor=entry.mem_factor,
                    had_mem=entry.had_mem,
                ),
                now=now,
                call=call,
            )
        except CampaignError as exc:
            refused.append(f"{entry.manifest} {', '.join(entry.targets)}: {exc.message}")
            continue
        more = f", memory ×{entry.mem_factor:g}" if entry.mem_factor else ""
        submitted += [
            f"{s.name} ({s.job_id}, attempt {entry.attempt}{more})" for s in outcome.submitted
        ]
    return tuple(submitted), len(waiting), tuple(refused)


def still_open(root: Path) -> list[ledger.Job]:
    """The recorded jobs a refresh here may still see change state (not refused, not ended; a
    submission whose outcome is unknown counts until a refresh finds it or rules it out); not
    another clone's local jobs (runner.elsewhere), whose end is recorded where they ran."""
    jobs = list(ledger.live(ledger.read(root)))
    away = {j.ledger_id for j in elsewhere.of(root, jobs)}
    return [j for j in jobs if j.ledger_id not in away]


def watch(
    *,
    root: Path,
    report: Callable[[Refresh, int], None],
    interval: float = WATCH_MIN_S,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
    sleep: Callable[[float], None] | None = None,
) -> Refresh:
    """Refresh, report (the refresh and the jobs still unfinished), wait ``interval``; until no
    job is unfinished. Returns the last refresh."""
    if not WATCH_MIN_S <= interval <= WATCH_MAX_S:
        raise UsageError(
            message=f"--interval {interval:g} is outside {WATCH_MIN_S:g}-{WATCH_MAX_S:g} s",
            hint=f"watch at most once a minute (--interval {WATCH_MIN_S:g} or more): each round "
            "queries the scheduler",
        )
    pause = sleep or _sleep
    while True:
        done = refresh(root=root, now=now, call=call)
        still = still_open(root)
        left = len(still) + done.retry_waiting
        report(done, left)
        if not left:
            return done
        pause(watchpace.pause_s(root, still, interval))
