"""qstat's live tasks and qacct's ended ones, folded into one JobState per job (Slurm's state
names, the campaign's 0-based task indices: Grid Engine's task t is index t - 1)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import timezone, tzinfo
from types import MappingProxyType

from campaignops.backends.gridengine import qacct, qstatxml
from campaignops.backends.gridengine.render import ERROR_STATE_EXIT, RESCHEDULE_EXIT, SHIFT
from campaignops.model import walltime
from campaignops.model.jobspec import JobState
from campaignops.model.states import FINISHED, worst

_SHIFTED = {RESCHEDULE_EXIT + SHIFT: RESCHEDULE_EXIT, ERROR_STATE_EXIT + SHIFT: ERROR_STATE_EXIT}


def task_ref(job: str, task: int | None) -> str:
    return job if task is None else f"{job}.{task}"


# Whether a task (job, Grid Engine task id or None, job name) ever started: its log exists.
Started = Callable[[str, "int | None", "str | None"], bool]
DELETED_WAITING = "deleted before it started (no log, no accounting record)"


def _live(item: qstatxml.Live, started: Started | None) -> JobState:
    state, why = qstatxml.state_of(item.letters)
    if (
        why == qstatxml.ENDED_UNACCOUNTED
        and started
        and not started(item.job, item.task, item.name)
    ):
        # qdel of a waiting task leaves no qacct record, ever: qstat -s z is its only trace.
        state, why = "CANCELLED", DELETED_WAITING
    return JobState(
        job_id=item.job,  # a task names its job; `task` is its index (model/jobspec.py)
        state=state,
        name=item.name,
        submitted=item.submitted,
        started=item.started,
        reason=why,
        task=None if item.task is None else item.task - 1,
    )


def _ended(record: qacct.Ended) -> JobState:
    state, why = qacct.verdict(record)
    code = record.exit_status
    if record.failed == 0 and code in _SHIFTED:
        code = _SHIFTED[code]  # the script's 199/200 for a task's own 99/100 (render.py)
    asked = qacct.limits(record.category)
    vmem = qacct.kib(asked.get("h_vmem"))
    rt = qacct.seconds(asked.get("h_rt"))
    return JobState(
        job_id=record.job,
        state=state,
        exit_code=code,
        name=record.name,
        submitted=record.submitted,
        started=record.started,
        ended=record.ended,
        elapsed_s=record.wallclock_s,
        # maxvmem: the job's peak virtual memory, what h_vmem limits (Grid Engine keeps no
        # peak RSS of the whole job); audit resources compares it with the request.
        max_rss=None if record.maxvmem_kib is None else f"{record.maxvmem_kib}K",
        req_mem=None if vmem is None else f"{vmem * record.slots}K",
        timelimit=None if rt is None else walltime.dhms(int(rt)),
        reason=why,
        task=None if record.task is None else record.task - 1,
    )


def _fold(job: str, tasks: Sequence[JobState]) -> JobState:
    states = [t.state for t in tasks]
    live = [s for s in states if s not in FINISHED]  # UNKNOWN: ended, not yet accounted
    codes = [t.exit_code for t in tasks if t.exit_code is not None]
    rss = [int(t.max_rss[:-1]) for t in tasks if t.max_rss]
    return JobState(
        job_id=job,
        state=(("PENDING" if set(live) == {"PENDING"} else "RUNNING") if live else worst(states)),
        exit_code=None if live else next((c for c in codes if c != 0), 0 if codes else None),
        name=next((t.name for t in tasks if t.name), None),
        submitted=min((t.submitted for t in tasks if t.submitted), default=None),
        started=min((t.started for t in tasks if t.started), default=None),
        ended=None if live else max((t.ended for t in tasks if t.ended), default=None),
        elapsed_s=max((t.elapsed_s for t in tasks if t.elapsed_s is not None), default=None),
        max_rss=f"{max(rss)}K" if rss else None,  # the limits are per task: the largest
        req_mem=next((t.req_mem for t in tasks if t.req_mem), None),
        timelimit=next((t.timelimit for t in tasks if t.timelimit), None),
        tasks=MappingProxyType(
            {t.task: t for t in sorted(tasks, key=lambda t: t.task or 0) if t.task is not None}
        ),
    )


def _combine(job: str, live: Iterable[JobState], ended: Iterable[JobState]) -> JobState:
    by_task: dict[int | None, JobState] = {s.task: s for s in ended}
    for s in live:  # a rescheduled task runs again: live wins; a zombie's record wins over it
        if s.reason not in (qstatxml.ENDED_UNACCOUNTED, DELETED_WAITING) or s.task not in by_task:
            by_task[s.task] = s
    if set(by_task) == {None}:
        return by_task[None]
    return _fold(job, [s for t, s in by_task.items() if t is not None])


def parse_states(
    outputs: Sequence[str], *, zone: tzinfo = timezone.utc, started: Started | None = None
) -> dict[str, JobState]:
    """Every job in qstat's XML and qacct's records (either output, in any order), by id.

    ``zone`` is where qstat and qacct ran: UTC for the backend's queries (``TZ=UTC0``), or a
    recording's own zone. ``started`` tells a zombie task that never started (CANCELLED: deleted
    while it waited) from one whose record is still on its way (UNKNOWN); without it, UNKNOWN."""
    live: dict[str, list[JobState]] = {}
    ended: dict[str, list[JobState]] = {}
    for out in outputs:
        if out.lstrip().startswith("<"):
            for item in qstatxml.parse(out, zone):
                live.setdefault(item.job, []).append(_live(item, started))
        else:
            for record in qacct.parse(out, zone).values():
                ended.setdefault(record.job, []).append(_ended(record))
    return {
        job: _combine(job, live.get(job, ()), ended.get(job, ()))
        for job in sorted({*live, *ended}, key=int)
    }
