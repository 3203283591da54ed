"""What a scheduler's answer means for the jobs the ledger records: each job's state for the
ledger and its tasks' entries that changed (a task that newly ended in failure diagnosed), the
state record of a refresh, and the scheduler's job for a submission whose result was lost.
No I/O of its own (the diagnoser it is handed reads the logs): campaign status asks the
scheduler and writes the ledger (runner/status.py).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping

from campaignops.backends import script
from campaignops.learn.diagnosis.engine import Diagnosis
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState
from campaignops.model.states import FINISHED

# A job found by name (no comment to match) must have been submitted this close to the intent.
CLOCK_SKEW_S = 120.0


def is_open(job: ledger.Job) -> bool:
    """May still change: not refused, and not known to have ended (Job.open)."""
    return job.open


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


def _recorded(job: ledger.Job, index: int) -> tuple[list[object], object]:
    """The task's recorded ``tries`` and ``attempt``."""
    tasks = job.record.get("tasks")
    known = tasks.get(str(index)) if isinstance(tasks, Mapping) else None
    if not isinstance(known, Mapping):
        return [], None
    found = known.get("tries")
    return (list(found) if isinstance(found, list) else []), known.get("attempt")


def tried(
    job: ledger.Job, index: int, task: JobState, diagnoser: Diagnoser | None
) -> dict[str, object]:
    """The attempts a box executor ran again within the job (``task.tries``) as the task's
    entry keeps them: ``attempt`` (the task's now) and ``tries``, each an ended task entry with
    its ``attempt``, signature and diagnosis, as a scheduler retry's job would have them. An
    attempt's end never changes: those recorded are kept, only new ones diagnosed. Empty when
    nothing new."""
    kept, attempt = _recorded(job, index)
    if not task.tries or (len(task.tries) <= len(kept) and task.attempt == attempt):
        return {}
    tries = kept[:]
    for one in task.tries[len(kept) :]:
        signature, diagnosis = _explain(one, index if len(job.targets) > 1 else None, diagnoser)
        entry = lw.task_fields(one, signature=signature) | {"attempt": one.attempt}
        tries.append(entry if diagnosis is None else entry | {"diagnosis": diagnosis})
    return {"attempt": task.attempt, "tries": tries}


def judge(
    job: ledger.Job, state: JobState, diagnoser: Diagnoser | None = None
) -> tuple[JobState, dict[int, dict[str, object]]]:
    """The job's state for the ledger, and the entries of its tasks that changed (a task that
    newly ended in failure diagnosed by ``diagnoser``; the attempts a box executor ran again:
    ``tried``). An array is finished only when each of its targets' tasks has ended (a
    scheduler that folds an array early, or accounts some tasks late, does not end it)."""
    size = len(job.targets)
    entries: dict[int, dict[str, object]] = {}
    if size == 1 and 0 in state.tasks:
        # A job of one target keeps its outcome in the job's own fields; its task's entry
        # holds only the attempts its executor ran again.
        again = tried(job, 0, state.tasks[0], diagnoser)
        if again:
            entries[0] = again
    if size > 1:
        for index, task in state.tasks.items():
            if 0 <= index < size and task.state != "UNKNOWN":
                entry = lw.task_fields(task, reason=reason_of(task.state, task.exit_code))
                again = tried(job, index, task, diagnoser)
                if again or _changed(job, index, entry):
                    signature, diagnosis = _explain(task, index, diagnoser)
                    entries[index] = (
                        entry
                        | {
                            k: v
                            for k, v in (("signature", signature), ("diagnosis", diagnosis))
                            if v is not None
                        }
                        | again
                    )
        ended = all(
            index in state.tasks and state.tasks[index].state in FINISHED for index in range(size)
        )
        if state.state in FINISHED and not ended:
            state = dataclasses.replace(state, state="RUNNING", exit_code=None, ended=None)
    reason = reason_of(state.state, state.exit_code)
    if reason is not None and state.reason is None:
        state = dataclasses.replace(state, reason=reason)
    return state, entries


def state_record(
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


def match(job: ledger.Job, found: dict[str, JobState], claimed: set[str]) -> JobState | None:
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
