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

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.backends import script
from campaignops.core import yamldoc
from campaignops.core.errors import CampaignError, UsageError
from campaignops.learn.diagnosis.engine import Diagnosis
from campaignops.learn.diagnosis.tasks import Diagnosers
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import FINISHED, JobState
from campaignops.runner import elsewhere, retry, submit, submitlock, watchpace
from campaignops.views import render as views

Call = Callable[[Sequence[str]], scheduler.Call]
WATCH_MIN_S = 60.0
WATCH_MAX_S = 86400.0


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


@dataclass(frozen=True)
class Refresh:
    queries: int  # scheduler calls made
    changed: tuple[str, ...]  # ledger ids with a new state record
    reconciled: tuple[str, ...]  # ledger ids whose lost or unknown result was found
    ruled_out: tuple[str, ...] = ()  # ledger ids the scheduler never queued
    retried: tuple[str, ...] = ()  # OUT_OF_MEMORY retries submitted (oom_retry): job names
    retry_waiting: int = 0  # retries whose delay has not passed yet
    retry_refused: tuple[str, ...] = ()  # retries a gate refused: what and why
    # Why a backend left tasks UNKNOWN (an unreachable box, an unusable answer), and an ssh
    # link with no shared connection: one line each, never recorded in the ledger.
    unanswered: tuple[str, ...] = ()
    # ssh placements the backend page does not vouch for (never connected to): where and why
    unvouched: tuple[str, ...] = ()


# An unresolved submission younger than this may still be in its scheduler call (another
# process is submitting it): it is looked up, but not yet declared never queued.
NEVER_QUEUED_AFTER_S = 300.0
# A job found by name (no comment to match) must have been submitted this close to the intent.
CLOCK_SKEW_S = 120.0


def is_open(job: ledger.Job) -> bool:
    """May still change: not refused, and not known to have ended."""
    return not job.error and job.state not in FINISHED


def reason_of(state: str, exit_code: int | None) -> str | None:
    """What a task's exit code says beyond its state (the rendered script's own codes)."""
    return script.REASONS.get(exit_code) if state == "FAILED" and exit_code is not None else None


# Ends worth explaining: a success needs no diagnosis, a cancel was a person's decision.
_EXPLAINED = FINISHED - {"COMPLETED", "CANCELLED"}

# (array index or None, the task's state) → the catalog's diagnosis of that task.
Diagnoser = Callable[[int | None, JobState], Diagnosis]


def _explain(
    state: JobState, index: int | None, diagnoser: Diagnoser | None
) -> tuple[str | None, dict[str, str | None] | None]:
    """The signature and diagnosis of a task that ended in failure (else nothing)."""
    if state.state not in _EXPLAINED:
        return None, None
    if diagnoser is None:
        return f"{state.state}:{'-' if state.exit_code is None else state.exit_code}", None
    found = diagnoser(index, state)
    return found.signature, diagnosis_field(found)


def diagnosis_field(found: Diagnosis) -> dict[str, str | None]:
    return {"entry": found.entry_id, "category": found.category}


def _changed(job: ledger.Job, index: int, entry: dict[str, object]) -> bool:
    tasks = job.record.get("tasks")
    known = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
    recorded: Mapping[str, object] = known if isinstance(known, Mapping) else {}
    return any(recorded.get(k) != v for k, v in entry.items())


def judge(
    job: ledger.Job, state: JobState, diagnoser: Diagnoser | None = None
) -> tuple[JobState, dict[int, dict[str, object]]]:
    """The job's state for the ledger, and the entries of its tasks that changed (a task that
    newly ended in failure diagnosed by ``diagnoser``). An array is finished only when each of
    its targets' tasks has ended (a scheduler that folds an array early, or accounts some
    tasks late, does not end it)."""
    size = len(job.targets)
    entries: dict[int, dict[str, object]] = {}
    if size > 1:
        for index, task in state.tasks.items():
            if 0 <= index < size and task.state != "UNKNOWN":
                entry = lw.task_fields(task, reason=reason_of(task.state, task.exit_code))
                if _changed(job, index, entry):
                    signature, diagnosis = _explain(task, index, diagnoser)
                    entries[index] = entry | {
                        k: v
                        for k, v in (("signature", signature), ("diagnosis", diagnosis))
                        if v is not None
                    }
        ended = all(
            index in state.tasks and state.tasks[index].state in FINISHED for index in range(size)
        )
        if state.state in FINISHED and not ended:
            state = dataclasses.replace(state, state="RUNNING", exit_code=None, ended=None)
    reason = reason_of(state.state, state.exit_code)
    if reason is not None and state.reason is None:
        state = dataclasses.replace(state, reason=reason)
    return state, entries


def _state_record(
    job: ledger.Job,
    state: JobState,
    tasks: Mapping[int, Mapping[str, object]],
    when: dt.datetime,
    diagnoser: Diagnoser | None,
) -> dict[str, object]:
    """The state record of a refresh; a single job that newly ended in failure carries its
    signature and diagnosis (an array's live in its task entries). ``diagnoser`` None: the
    job's own state did not change, so nothing is diagnosed again."""
    signature, diagnosis = (
        _explain(state, None, diagnoser)
        if diagnoser is not None and len(job.targets) <= 1
        else (None, None)
    )
    return lw.state_record(
        ledger_id=job.ledger_id,
        time=when,
        state=state,
        tasks=tasks,
        signature=signature,
        diagnosis=diagnosis,
    )


def _match(job: ledger.Job, found: dict[str, JobState], claimed: set[str]) -> JobState | None:
    """The scheduler's job for a submission whose result was lost: by the comment carrying its
    ledger id, else (a scheduler that keeps no comment) the first unclaimed job of its name
    submitted at or after the intent."""
    candidates = [s for s in found.values() if s.job_id not in claimed]
    by_comment = next((s for s in candidates if s.comment and job.ledger_id in s.comment), None)
    if by_comment is not None:
        return by_comment
    since = ledger.parse_time(job.first_time)
    named = [
        s
        for s in candidates
        if s.name == job.text("name")
        and not s.comment
        and since is not None
        and (when := ledger.parse_time(s.submitted)) is not None
        and (when - since).total_seconds() >= -CLOCK_SKEW_S
    ]
    return min(named, key=lambda s: s.submitted or "", default=None)


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


def _refresh(
    *,
    root: Path,
    now: Callable[[], dt.datetime],
    call: Call,
) -> Refresh:
    history = ledger.read(root)
    by_backend: dict[str, list[ledger.Job]] = {}
    for job in history.jobs:
        if is_open(job):
            by_backend.setdefault(job.text("backend") or "local", []).append(job)
    calls = 0

    def counting(run: Call) -> Call:
        def counted(argv: Sequence[str]) -> scheduler.Call:
            nonlocal calls
            calls += 1
            return run(argv)

        return counted

    diagnosers = Diagnosers(root)
    records: list[dict[str, object]] = []
    changed: list[str] = []
    reconciled: list[str] = []
    ruled_out: list[str] = []
    claimed = {j.job_id for j in history.jobs if j.job_id}
    unanswered: list[str] = []
    unvouched: list[str] = []
    for name, jobs in sorted(by_backend.items()):
        be = backends.for_page(name, backends.page(root, name), root=root)
        counted = counting(backends.calling(be, call))
        lost = [j for j in jobs if not j.job_id]
        names = sorted({str(j.text("name")) for j in lost if j.text("name")})
        found = be.lookup(names, counted) if names else {}
        for j in lost:
            match = _match(j, found, claimed)
            if match is not None:
                claimed.add(match.job_id)
                diagnoser = diagnosers.of(j, match.job_id, name, be)
                state, entries = judge(j, match, diagnoser)
                records.append(
                    lw.result_record(ledger_id=j.ledger_id, time=now(), job_id=match.job_id)
                )
                records.append(_state_record(j, state, entries, now(), diagnoser))
                reconciled.append(j.ledger_id)
                continue
            since = ledger.parse_time(j.first_time)
            if since is not None and (now() - since).total_seconds() >= NEVER_QUEUED_AFTER_S:
                records.append(
                    lw.result_record(
                        ledger_id=j.ledger_id,
                        time=now(),
                        job_id=None,
                        error="never queued: the scheduler holds no job of this submission",
                    )
                )
                ruled_out.append(j.ledger_id)
        ids = {str(j.job_id): j for j in jobs if j.job_id}
        if not ids:
            continue
        kind = backends.kind_of(backends.page(root, name))
        if kind is not None:
            unvouched += kind.refusals(root, ids)
        outputs = [counted(a).stdout for a in be.query_argvs(sorted(ids))]
        states: dict[str, JobState] = be.parse_states(outputs)
        unanswered += _unanswered(name, [states[i] for i in sorted(ids) if i in states])
        if kind is not None and kind.query_warning is not None:
            unanswered.append(kind.query_warning() or "")
        for job_id, job in ids.items():
            seen = states.get(job_id)
            if seen is None or seen.state == "UNKNOWN":
                # The backend does not know the job (another clone's local job, a purged id):
                # that says nothing of it, and must not overwrite what the ledger knows.
                continue
            diagnoser = diagnosers.of(job, job_id, name, be)
            state, entries = judge(job, seen, diagnoser)
            same = state.state == job.state and state.exit_code == job.record.get("exit_code")
            if same and not entries:
                continue
            records.append(_state_record(job, state, entries, now(), None if same else diagnoser))
            changed.append(job.ledger_id)
    if records:
        lw.append(root, records)
    retried, waiting, refused = _retry_oom(root=root, now=now, call=call)
    views.render_all(root=root, write=True)
    return Refresh(
        queries=calls,
        changed=tuple(changed),
        reconciled=tuple(reconciled),
        ruled_out=tuple(ruled_out),
        retried=retried,
        retry_waiting=waiting,
        retry_refused=refused,
        unanswered=tuple(dict.fromkeys(w for w in unanswered if w)),
        unvouched=tuple(unvouched),
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
    try:
        kind = backends.kind_of(backends.page(root, job.backend or "local"))
    except CampaignError:
        return False
    return kind is not None and kind.retries_oom_itself(job.job_id or "")


def _retry_oom(
    *, root: Path, now: Callable[[], dt.datetime], call: Call
) -> tuple[tuple[str, ...], int, tuple[str, ...]]:
    """Submit the OUT_OF_MEMORY retries that are due (manifest oom_retry), through the same
    gates as any submission. Returns what was submitted, how many wait for their delay, and
    what a gate refused (tried again at the next refresh)."""
    due, waiting = retry.pending(
        ledger.read(root).jobs,
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
                retry=submit.Retry(attempt=entry.attempt, of=entry.of),
                now=now,
                call=call,
            )
        except CampaignError as exc:
            refused.append(f"{entry.manifest} {', '.join(entry.targets)}: {exc.message}")
            continue
        submitted += [f"{s.name} ({s.job_id}, attempt {entry.attempt})" for s in outcome.submitted]
    return tuple(submitted), len(waiting), tuple(refused)


def still_open(root: Path) -> list[ledger.Job]:
    """The recorded jobs a refresh here may still see change state (not refused, not ended; a
    submission whose outcome is unknown counts until a refresh finds it or rules it out); not
    another clone's local jobs (runner.elsewhere), whose end is recorded where they ran."""
    jobs = [j for j in ledger.read(root).jobs if is_open(j)]
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
