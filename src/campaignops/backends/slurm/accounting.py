"""What sacct and squeue answer, read: each job's and array task's state, times and memory.

slurm.py builds the calls (query_argvs, sibling_argv, lookup_argvs) whose answers this module
reads; the formats they ask for (SACCT_FIELDS, SQUEUE_FORMAT) are defined here, with their
reader. Checked on a real cluster (Slurm 22.05: dev/slurm_cluster.py, tests/runner/test_slurm.py):

- Times: both print local time without a zone; ``SLURM_TIME_FORMAT=%s`` gives epoch seconds
  (a ``%z`` in a longer format is dropped), written back as ISO 8601 in ``zone``.
- ``sacct -j`` (from the epoch, held jobs included), without ``-X``: MaxRSS is on the steps.
  The comment is there only with ``AccountingStoreFlags=job_comment``; squeue shows it anyway.
  sacct lags slurmctld by seconds, per task: a task without its final record (or with the
  ``allocation`` row slurmdbd makes before the job's start record, no Timelimit) is not done.
- ``squeue -r -t all``: every task slurmctld still holds (finished ones for MinJobAge), so a
  job is finished only when sacct has each of them.
- sacct shows a batch exit status over 128 less 128 (``exit 138`` is ``10:0``); a death by
  signal is ``0:<signal>``, read here as 128+signal.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from types import MappingProxyType

from campaignops.backends.command import SchedulerOutputError
from campaignops.model.jobspec import JobState
from campaignops.model.states import FINISHED
from campaignops.model.states import worst as spec_worst

# Comment last: it may hold "|".
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "MaxRSS", "ReqMem", "Timelimit", "AllocCPUS", "TotalCPU", "AllocTRES", "Comment")  # fmt: skip
# Array (or job) id, task index, state, reason, name, submit, start, limit, comment.
SQUEUE_FORMAT = "%F|%K|%T|%r|%j|%V|%S|%l|%k"

# Every Slurm state (sacct's and squeue's) as one of STATES.
_STATES = {
    "PENDING": "PENDING", "REQUEUED": "PENDING", "REQUEUE_HOLD": "PENDING",
    "REQUEUE_FED": "PENDING", "RESV_DEL_HOLD": "PENDING",
    "RUNNING": "RUNNING", "CONFIGURING": "RUNNING", "COMPLETING": "RUNNING",
    "RESIZING": "RUNNING", "SUSPENDED": "RUNNING", "STOPPED": "RUNNING",
    "SIGNALING": "RUNNING", "STAGE_OUT": "RUNNING",
    "COMPLETED": "COMPLETED", "FAILED": "FAILED", "SPECIAL_EXIT": "FAILED",
    "TIMEOUT": "TIMEOUT", "DEADLINE": "TIMEOUT", "OUT_OF_MEMORY": "OUT_OF_MEMORY",
    "CANCELLED": "CANCELLED", "REVOKED": "CANCELLED", "PREEMPTED": "PREEMPTED",
    "NODE_FAIL": "NODE_FAIL", "BOOT_FAIL": "NODE_FAIL",
}  # fmt: skip
_NO_VALUE = {"", "Unknown", "None", "N/A", "(null)"}
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}
# Job ids and array indices are 32-bit in Slurm: at most 10 ASCII digits. A longer number (or
# "²", which str.isdigit takes) is not one, and never reaches int() (4300 digits raise).
NUMBER = "[0-9]{1,10}"
_JOB_ID = re.compile(rf"({NUMBER})(?:_(?:({NUMBER})|\[[^\]]*\]))?(?:\+[0-9]+)?(?:\.(.+))?")


class SlurmOutputError(SchedulerOutputError):
    """sbatch, sacct or squeue printed something the Slurm backend cannot read."""


def _row_id(text: str) -> tuple[str, str | None, str | None]:
    """``12``, ``12_3``, ``12_[4-9%2]``, ``12.batch`` → (array/job id, task, step)."""
    match = _JOB_ID.fullmatch(text.strip())
    if match is None:
        raise SlurmOutputError(message=f"{text!r} is not a Slurm job id")
    return match[1], match[2], match[3]


def _state(text: str) -> str:
    return _STATES.get(text.split(" ")[0].rstrip("+"), "UNKNOWN")  # "CANCELLED by 0"


def _iso(text: str, zone: tzinfo | None) -> str | None:
    # ASCII digits only (str.isdigit takes "²"), and an epoch a datetime can hold: a time
    # this parser cannot read is unknown, not an error.
    if text in _NO_VALUE or not re.fullmatch(r"[0-9]{1,12}", text) or text == "0":
        return None
    try:
        when = datetime.fromtimestamp(int(text), tz=zone)
        return (when if zone else when.astimezone()).isoformat()
    except (OverflowError, OSError, ValueError):  # past year 9999, or the platform's range
        return None


def _seconds(text: str) -> float | None:
    """``[D-][HH:]MM:SS`` → seconds."""
    match = re.fullmatch(rf"(?:({NUMBER})-)?(?:({NUMBER}):)?({NUMBER}):({NUMBER})", text)
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def _cpu_seconds(text: str) -> float | None:
    """TotalCPU, ``[D-][HH:]MM:SS[.fff]`` → seconds (None: not measured)."""
    whole, _, fraction = text.partition(".")
    seconds = _seconds(whole)
    if seconds is None or not re.fullmatch("[0-9]{0,6}", fraction):
        return None
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


def _count(text: str) -> int | None:
    return int(text) if re.fullmatch(NUMBER, text) else None


def _gpus(tres: str) -> int | None:
    """``billing=2,cpu=2,gres/gpu=1,mem=1G,node=1`` → 1; no gres/gpu → None (typed
    ``gres/gpu:a100=1`` entries count when the untyped total is absent)."""
    found: dict[str, int] = {}
    for item in tres.split(","):
        name, _, value = item.partition("=")
        if name == "gres/gpu" or name.startswith("gres/gpu:"):
            count = _count(value)
            if count is not None:
                found[name] = count
    if "gres/gpu" in found:
        return found["gres/gpu"]
    return sum(found.values()) if found else None


def _kib(text: str | None) -> float:
    match = re.fullmatch(r"([0-9]{1,30}(?:\.[0-9]{0,30})?)([KMGTP]?)", text or "")
    return float(match[1]) * _UNITS[match[2]] if match else -1.0


def _exit(text: str) -> int | None:
    """``3:0`` → 3; ``0:9`` (killed by signal 9) → 137, as a shell reports it."""
    match = re.fullmatch(rf"({NUMBER}):({NUMBER})", text)
    if match is None:
        return None
    code, sig = int(match[1]), int(match[2])
    return code if code or not sig else 128 + sig


Tasks = dict[str, dict[int, JobState]]  # array/job id → task index (-1: not an array) → state


def _sacct_rows(stdout: str, zone: tzinfo | None) -> Tasks:
    """Allocation rows by array/job id and task; steps lend their MaxRSS."""
    rows: list[tuple[str, str | None, dict[str, str]]] = []
    rss: dict[tuple[str, str | None], str] = {}
    cpu: dict[tuple[str, str | None], float] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        cells = line.split("|", len(SACCT_FIELDS) - 1)
        if len(cells) != len(SACCT_FIELDS):
            raise SlurmOutputError(message=f"sacct printed {line[:200]!r}: not {SACCT_FIELDS}")
        f = dict(zip(SACCT_FIELDS, cells, strict=True))
        job, task, step = _row_id(f["JobID"])
        if step is None:
            rows.append((job, task, f))
        else:
            used = _cpu_seconds(f["TotalCPU"])
            if used is not None:  # the steps' CPU time, should the allocation row have none
                cpu[(job, task)] = cpu.get((job, task), 0.0) + used
            if _kib(f["MaxRSS"]) > _kib(rss.get((job, task))):
                rss[(job, task)] = f["MaxRSS"]  # the largest step (.batch, .0, ...) of the task
    tasks: Tasks = {}
    for job, task, f in rows:
        # A short job's row can come before slurmdbd has its start record (~5 s): named
        # "allocation", no Timelimit, ReqMem "16?". Such a task is not yet accounted.
        if not f["Timelimit"]:
            continue
        state = _state(f["State"])
        done = state in FINISHED
        tasks.setdefault(job, {})[-1 if task is None else int(task)] = JobState(
            job_id=job,
            state=state,
            exit_code=_exit(f["ExitCode"]) if done else None,
            name=f["JobName"] or None,
            comment=f["Comment"] or None,
            submitted=_iso(f["Submit"], zone),
            started=_iso(f["Start"], zone),
            ended=_iso(f["End"], zone) if done else None,
            elapsed_s=_seconds(f["Elapsed"]),
            max_rss=rss.get((job, task)),
            req_mem=f["ReqMem"] or None,
            cpu_time_s=(_cpu_seconds(f["TotalCPU"]) or cpu.get((job, task))) if done else None,
            alloc_cpus=_count(f["AllocCPUS"]),
            alloc_gpus=_gpus(f["AllocTRES"]),
            timelimit=f["Timelimit"],
        )
    return tasks


def fold(tasks: Mapping[int, JobState]) -> JobState:
    """One job, or a whole array from its tasks: the worst state when all have finished, with
    the exit code of its first task in that state; RUNNING while any runs; else PENDING."""
    ordered = [tasks[i] for i in sorted(tasks)]
    first, states = ordered[0], [s.state for s in ordered]
    finished = all(s in FINISHED for s in states)
    if finished:
        worst = spec_worst(states)
        code = next(s.exit_code for s in ordered if s.state == worst)
    else:
        worst, code = ("PENDING" if all(s == "PENDING" for s in states) else "RUNNING"), None
    rss = max((s.max_rss for s in ordered if s.max_rss), key=_kib, default=None)
    return dataclasses.replace(
        first,
        state=worst,
        exit_code=code,
        submitted=min((s.submitted for s in ordered if s.submitted), default=None),
        started=min((s.started for s in ordered if s.started), default=None),
        ended=max((s.ended for s in ordered if s.ended), default=None) if finished else None,
        elapsed_s=max((s.elapsed_s for s in ordered if s.elapsed_s is not None), default=None),
        max_rss=rss,  # the limits are per task: report the largest
        # An array's CPU time is each task's own (``tasks``), never the first task's.
        cpu_time_s=first.cpu_time_s if len(ordered) == 1 else None,
        tasks=MappingProxyType(
            {i: dataclasses.replace(tasks[i], task=i) for i in sorted(tasks) if i >= 0}
        ),
    )


def _squeue_rows(stdout: str, zone: tzinfo | None) -> tuple[Tasks, dict[str, str]]:
    """Tasks by array/job id as slurmctld has them, and the reason each job waits (or ran)."""
    tasks: Tasks = {}
    reasons: dict[str, str] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        row = line.split("|", 8)
        if len(row) != 9:
            raise SlurmOutputError(message=f"squeue printed {line[:200]!r}: not 9 fields")
        job, task, state, reason, name, submit, start, limit, comment = row
        if not re.fullmatch(NUMBER, job):
            raise SlurmOutputError(message=f"squeue printed {line[:200]!r}: {job!r} is no job id")
        now = _state(state)
        index = int(task) if re.fullmatch(NUMBER, task) else -1  # N/A: not an array task
        tasks.setdefault(job, {})[index] = JobState(
            job_id=job,
            state=now,
            name=name or None,
            comment=None if comment in _NO_VALUE else comment,
            submitted=_iso(submit, zone),
            started=_iso(start, zone) if now not in ("PENDING", "UNKNOWN") else None,
            timelimit=limit or None,
        )
        if now == "PENDING" or job not in reasons:
            reasons[job] = reason  # a waiting task says why the array is not done
    return tasks, reasons


def _merge(accounted: JobState | None, now: JobState) -> JobState | None:
    """A task as slurmctld (``now``) and sacct (``accounted``) see it; None: sacct's stands."""
    if now.state in FINISHED:
        if accounted is not None and accounted.state in FINISHED:
            return None
        # Ended, but sacct has not the final record yet: not finished for the ledger either.
        now = dataclasses.replace(now, state="RUNNING")
    if accounted is None:
        return now
    return dataclasses.replace(accounted, state=now.state, exit_code=None, ended=None)


def parse_states(outputs: Sequence[str], *, zone: tzinfo | None = None) -> dict[str, JobState]:
    """Every job and array in query_argvs' outputs (sacct's, then squeue's), by id.

    A job is finished once sacct has the final record of each task slurmctld knows of (sacct
    lags by seconds, more for arrays, and leaves out jobs not yet eligible); slurmctld decides
    while a task is live. Times are ISO 8601 in ``zone`` (None: this machine's zone).
    """
    tasks = _sacct_rows(outputs[0], zone)
    live = _squeue_rows(outputs[1], zone)[0] if len(outputs) > 1 else {}
    for job, known in live.items():
        mine = tasks.setdefault(job, {})
        if any(i >= 0 for i in known):
            mine.pop(-1, None)  # sacct's folded pending row ("12_[4-9]"): squeue lists each
        for index, now in known.items():
            merged = _merge(mine.get(index), now)
            if merged is not None:
                mine[index] = merged
    return {job: fold(t) for job, t in tasks.items() if t}


def parse_reasons(stdout: str) -> dict[str, str]:
    """squeue's reason per job or array (``Dependency``, ``DependencyNeverSatisfied``)."""
    return _squeue_rows(stdout, None)[1]
