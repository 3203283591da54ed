"""What ``qstat -f -F json`` answers, read: each PBS job's and subjob's state, times, memory.

pbs.py builds the qstat calls (query_argvs, sibling_argv) whose answers this module reads, and
re-exports parse_states and PbsOutputError so that it is the whole ``backends.Backend``.
Sources as in pbs.py (OpenPBS, ALCF's user guides, real output in tests/runner/recorded/):

- States are given in Slurm's names: ``job_state`` letters for live jobs (job.h), and for a
  finished one (F, a finished subjob X) its ``substate`` and ``Exit_status`` (JOB_EXEC_*).
- Times are ``ctime(3)`` dates in qstat's zone (UTC for the runner's ``TZ=UTC0`` queries),
  written back as ISO 8601; sizes (``151384560kb``) as Slurm writes them (``151384560K``).
- Per-task truth: ``qstat -x -t`` lists each subjob (``<n>[<i>].<server>``, job_state X once
  ended) with its own ``Exit_status``, ``stime`` and ``obittime``; parse_states keeps them as
  the array's ``tasks``, and folds them into the array's state.
- The ledger id and commit come back from ``Variable_List``'s ``CAMPAIGN_COMMENT`` (pbs.py
  puts them there with ``-v``: PBS has no ``--comment``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from types import MappingProxyType
from typing import Any

from campaignops.backends.command import SchedulerOutputError
from campaignops.model import walltime
from campaignops.model.jobspec import JobState
from campaignops.model.states import FINISHED, worst

COMMENT_VAR = "CAMPAIGN_COMMENT"
SUBSTATE_TERMINATED = 91  # job.h: deleted (qdel) before or while it ran
SUBSTATE_FAILED = 93  # job.h: ended on a PBS error (Exit_status < 0)
# A subjob's id, <n>[<i>].<server> (qdel takes it too: pbs.cancel_argv).
SUBJOB_ID = re.compile(r"([0-9]+)\[([0-9]{1,10})\](.*)")
_CTIME = re.compile(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) +([0-9]{1,2}) ([0-9:]{8}) ([0-9]{4})")
_MONTHS = {  # ctime(3)'s month names (C locale), as qstat prints them
    "Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
    "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12,
}  # fmt: skip
# Numbers are bounded before int(): a longer one is no size, time or status qstat prints (and
# past 4300 digits int() raises).
_SIZE = re.compile(r"([0-9]{1,20})(b|kb|mb|gb|tb|pb)", re.IGNORECASE)
_KIB = {"b": 1 / 1024, "kb": 1, "mb": 1024, "gb": 1024**2, "tb": 1024**3, "pb": 1024**4}

# job_state letters (job.h JOB_STATE_LTR_*) of jobs that have not finished.
_LIVE = {
    "Q": "PENDING", "H": "PENDING", "W": "PENDING", "T": "PENDING",
    "R": "RUNNING", "E": "RUNNING", "B": "RUNNING", "S": "RUNNING", "U": "RUNNING",
    "M": "UNKNOWN",  # moved to another server: its state is there, not here
}  # fmt: skip
# Exit_status of a finished job (job.h JOB_EXEC_*); any other value but 0 is FAILED.
_EXIT = {
    0: "COMPLETED",
    -29: "TIMEOUT",  # JOB_EXEC_KILL_WALLTIME
    -27: "OUT_OF_MEMORY",  # JOB_EXEC_KILL_MEM
    -26: "OUT_OF_MEMORY",  # JOB_EXEC_KILL_VMEM
    -11: "NODE_FAIL",  # JOB_EXEC_RERUN
    -14: "NODE_FAIL",  # JOB_EXEC_RERUN_SIS_FAIL
    -20: "NODE_FAIL",  # JOB_EXEC_RERUN_MS_FAIL
}


class PbsOutputError(SchedulerOutputError):
    """qsub or qstat printed something this backend cannot read."""


def _seconds(clock: str) -> int:
    """qstat's ``HH:MM:SS`` (hours past 24 kept) in seconds."""
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return (hours * 60 + minutes) * 60 + seconds


def _jobs(stdout: str) -> dict[str, dict[str, Any]]:
    if not stdout.strip():
        return {}  # qstat prints its JSON last (qstat.c): nothing printed, nothing known
    try:
        # strict=False: qstat does not escape control characters in values (openpbs#2541).
        doc = json.loads(stdout, strict=False)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting past the stack
        raise PbsOutputError(message=f"qstat printed no JSON: {exc}") from None
    jobs = doc.get("Jobs", {}) if isinstance(doc, dict) else None  # no "Jobs": none matched
    if not isinstance(jobs, dict):
        raise PbsOutputError(message=f"qstat JSON has no job table: {stdout[:200]!r}")
    return {k: v for k, v in jobs.items() if isinstance(v, dict)}


def _table(job: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = job.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: object) -> int | None:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,18}", value):
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _iso(value: object, zone: tzinfo) -> str | None:
    """A ctime(3) date (``Tue Oct  4 21:23:20 2022``) in ``zone`` as ISO 8601 with its offset."""
    match = _CTIME.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or match[1] not in _MONTHS:
        return None  # a date this parser does not know reads as unknown, not as an error
    try:
        hour, minute, second = (int(part) for part in match[3].split(":"))
        when = datetime(int(match[4]), _MONTHS[match[1]], int(match[2]), hour, minute, second)
        return when.replace(tzinfo=zone).isoformat()
    except (OverflowError, ValueError):  # Feb 31, hour 25, year 0 or past 9999: unknown
        return None


def _clock_s(value: object) -> int | None:
    ok = isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}:[0-5][0-9]:[0-5][0-9]", value)
    return _seconds(value) if ok and isinstance(value, str) else _int(value)


def _slurm_clock(total: int | None) -> str | None:
    return None if total is None or total < 0 else walltime.dhms(total)


def _kib(value: object) -> str | None:
    """PBS's ``151384560kb`` (or ``8gb``) in KiB as Slurm writes it: ``151384560K``."""
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    return None if match is None else f"{int(int(match[1]) * _KIB[match[2].lower()])}K"


def finished_state(job: Mapping[str, Any]) -> str:
    """The Slurm state of a job whose ``job_state`` is F (or X, a finished subjob)."""
    substate, code = _int(job.get("substate")), _int(job.get("Exit_status"))
    if substate == SUBSTATE_TERMINATED:
        return "CANCELLED"  # qdel'd by its user, an operator, or a scheduler preempting it
    if code is None:
        return "FAILED" if substate == SUBSTATE_FAILED else "UNKNOWN"
    return _EXIT.get(code, "FAILED")


def job_state(job_id: str, job: Mapping[str, Any], zone: tzinfo) -> JobState:
    """One qstat record as a JobState (Slurm's state names, times ISO 8601 in ``zone``)."""
    done = job.get("job_state") in ("F", "X")
    used, asked = _table(job, "resources_used"), _table(job, "Resource_List")
    comment = _table(job, "Variable_List").get(COMMENT_VAR)
    name = job.get("Job_Name")
    return JobState(
        job_id=job_id,
        state=finished_state(job) if done else _LIVE.get(str(job.get("job_state")), "UNKNOWN"),
        exit_code=_int(job.get("Exit_status")),
        name=name if isinstance(name, str) else None,
        comment=comment.replace(":", " ") if isinstance(comment, str) else None,
        # ctime, not qtime: qtime restarts when a routing queue (Polaris prod) moves the job.
        submitted=_iso(job.get("ctime") or job.get("qtime"), zone),
        started=_iso(job.get("stime"), zone),
        # A job deleted before it ran has no obittime: it left the queue at its last mtime.
        ended=_iso(job.get("obittime") or (job.get("mtime") if done else None), zone),
        elapsed_s=_clock_s(used.get("walltime")),
        max_rss=_kib(used.get("mem")),  # summed over the job's nodes, unlike Slurm's MaxRSS
        req_mem=_kib(asked.get("mem")),
        timelimit=_slurm_clock(_clock_s(asked.get("walltime"))),
    )


def _index(state: JobState) -> int:
    return -1 if state.task is None else state.task


def fold(parent: JobState, subjobs: Sequence[JobState]) -> JobState:
    """A whole array from its parent's record and its subjobs' records (``qstat -t``): the
    folded state as the array's, and each subjob with an index as its own task."""
    states = [s.state for s in subjobs]
    finished = parent.state in FINISHED or all(s in FINISHED for s in states)
    codes = [s.exit_code for s in subjobs if s.exit_code is not None]
    if finished:
        state = worst(states)
    else:
        state = "PENDING" if all(s == "PENDING" for s in states) else "RUNNING"
    rss = [int(s.max_rss[:-1]) for s in subjobs if s.max_rss]
    return dataclasses.replace(
        parent,
        state=state,
        exit_code=next((c for c in codes if c != 0), 0 if codes else None) if finished else None,
        started=parent.started or min((s.started for s in subjobs if s.started), default=None),
        ended=parent.ended if finished else None,
        elapsed_s=max((s.elapsed_s for s in subjobs if s.elapsed_s is not None), default=None),
        max_rss=f"{max(rss)}K" if rss else None,  # the limits are per subjob: report the largest
        tasks=MappingProxyType(
            {s.task: s for s in sorted(subjobs, key=_index) if s.task is not None}
        ),
    )


def parse_states(outputs: Sequence[str], *, zone: tzinfo = timezone.utc) -> dict[str, JobState]:
    """Every job and array in the outputs, by id. An array's subjobs (``<n>[<i>].<server>``,
    ``qstat -t``) are folded into its state and kept, each with its own state, exit code and
    times, in its ``tasks`` by index (``task`` = i); a single job has no ``tasks``.

    ``zone`` is where qstat ran: UTC for query_argvs (``TZ=UTC0``), or a recording's own zone.
    """
    records: dict[str, JobState] = {}
    subjobs: dict[str, list[JobState]] = {}
    for out in outputs:
        for key, job in _jobs(out).items():
            match = SUBJOB_ID.fullmatch(key)
            if match:
                parent = f"{match[1]}[]{match[3]}"
                task = dataclasses.replace(job_state(key, job, zone), task=int(match[2]))
                subjobs.setdefault(parent, []).append(task)
            else:
                records[key] = job_state(key, job, zone)
    return {k: fold(s, subjobs[k]) if k in subjobs else s for k, s in records.items()}
