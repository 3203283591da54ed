"""The local backend: jobs run on this machine, no scheduler and no daemon.

A job is a bash script whose ``#LOCAL`` lines say what sbatch would read from ``#SBATCH`` (name,
comment, array and cap, afterok parents, time limit, warning signal). ``localexec submit`` copies
the script under ``.campaign/local/<id>/``, starts a detached executor (a new session, so its
process group outlives the submitting process and any terminal) and prints the id at once. The
executor, the one supervisor's loop that box and local GPU jobs run under too
(campaignops.remote.executor), runs the array's tasks, at most ``cap`` at a time, each in a
process group of its own, and writes the job's state to files there; ``localexec status`` reads
those files and asks the kernel (``/proc``: the pid and its start time) whether an unfinished
job's executor is still alive.

Decisions that differ from a real scheduler (see the backend page, backends/local.md):

- A parent that ends in any state but COMPLETED makes its afterok children CANCELLED with reason
  DependencyNeverSatisfied (Slurm's ``kill_invalid_depend``): with no scheduler to clean up, a
  child left PENDING forever would block the sibling gate forever.
- An executor that died while its job was unfinished (reboot, ``kill -9``) reads as NODE_FAIL,
  "the machine under the job went away", not FAILED: the job's own code did not fail, so the
  breaker must not count it as a failure signature.
- The time limit is per task, as for Slurm array tasks: TERM to the task's group at the limit,
  KILL ``kill-wait`` seconds later (Slurm's KillWait, 30 s), state TIMEOUT. The warning signal
  goes to the task's batch shell only, like ``--signal=B:USR1@N``.
- A task is over when its script exits; whatever it left running in its group is killed then
  (as Slurm's process tracking does), so nothing outlives the job.
- Each task runs in a session of its own, so a limit or a cancel hits one task. The job's handle
  is the executor's group (``executor_pid`` in state.json): ``kill -TERM -- -PGID`` on it cancels
  every task (TERM, then KILL after kill-wait); a KILL there would orphan the tasks.
- Memory is enforced as Slurm does without cgroups (jobacct_gather's OverMemoryKill): the
  resident memory of the task's process group is read from /proc once a second, and a task over
  its ``resources.mem`` (``#LOCAL --mem=``, Slurm's units: a bare number is MiB) is killed at
  once and ends OUT_OF_MEMORY (exit 137), which the manifest's ``oom_retry`` retries. A spike
  shorter than a second can pass. CPUs and GPUs are not enforced, and mail and requeue do not
  apply. An array without a cap runs at most ``os.cpu_count()`` tasks at once.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from campaignops.backends import command as scheduler
from campaignops.backends import script
from campaignops.backends.local.directives import (
    EXECUTOR,
    JOB_ID,
    PREFIX,
    LocalBackendError,
    mem_bytes,
)
from campaignops.model import walltime
from campaignops.model.jobspec import TASK_INDEX, JobSpec, JobState
from campaignops.model.states import STATES
from campaignops.remote.supervision import KILL_WAIT_S  # the supervisor's default, rendered

STATE_DIR = ".campaign/local"  # relative to the campaign checkout; gitignored by the template
# #LOCAL time= mirrors #SBATCH --time: D-HH:MM:SS.
WALLTIME = walltime.dhms
WARNING_SIGNAL = "USR1"
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _directive_lines(spec: JobSpec) -> list[tuple[str, str]]:
    lines = [("job-name", spec.name), ("chdir", spec.workdir), ("log-dir", spec.log_dir)]
    if spec.comment:
        lines.append(("comment", spec.comment))
    if spec.is_array or spec.max_parallel:
        lines.append(("array", spec.array or f"0-0%{spec.max_parallel}"))
    if spec.after:
        lines.append(("dependency", "afterok:" + ":".join(spec.after)))
    if spec.time_s is not None:
        lines.append(("time", WALLTIME(spec.time_s)))
        if spec.warning_seconds:
            lines.append(("signal", f"B:{WARNING_SIGNAL}@{spec.warning_seconds}"))
    lines.append(("kill-wait", str(KILL_WAIT_S)))
    if spec.resources.mem is not None:
        mem_bytes(spec.resources.mem)  # refused here, not by the executor later
        lines.append(("mem", str(spec.resources.mem)))
    for key, value in lines:
        # parse_directives splits the script as str.splitlines does: on \n and \r, and also on
        # \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029. Any of them in a value would cut it short
        # (an id with U+2028 gave the executor a truncated job name) and start a line of its own.
        if not value or value.splitlines() != [value]:
            raise LocalBackendError(
                message=f"job {spec.name!r}: {key} {value!r} cannot be one #LOCAL line",
                hint="names, comments and paths must be non-empty single lines (no line or "
                "paragraph separators)",
            )
    return lines


def render(spec: JobSpec) -> str:
    """The job script: ``#LOCAL`` directives, then task ``$CAMPAIGN_TASK_INDEX`` verbatim."""
    if not spec.tasks:
        raise LocalBackendError(message=f"job {spec.name!r} has no tasks", hint="plan a target")
    bad = [k for k in spec.env if not _ENV_KEY.fullmatch(k)]
    if bad:
        raise LocalBackendError(
            message=f"job {spec.name!r}: environment names {bad} are not shell variables",
            hint="use letters, digits and underscores",
        )
    return "\n".join(
        [
            "#!/bin/bash",
            "# Local job, run by campaignops.backends.local.executor, which reads the #LOCAL lines as",
            "# sbatch reads #SBATCH. Rendered from a committed manifest: change that, not this.",
            *(f"{PREFIX}--{key}={value}" for key, value in _directive_lines(spec)),
            # Strict mode before cd: a missing checkout must stop the job, not run it elsewhere.
            "set -euo pipefail",
            f"cd {shlex.quote(spec.workdir)}",
            f'export {TASK_INDEX}="${{{TASK_INDEX}:-0}}"',
            *(f"export {k}={shlex.quote(v)}" for k, v in sorted(spec.env.items())),
            *script.spec_body(spec, warned=spec.warning_seconds is not None),
            "",
        ]
    )


def submit_argv(script_path: str, *, state_root: str) -> list[str]:
    """One call: copies the script, starts its detached executor, prints the job id."""
    return [sys.executable, "-m", EXECUTOR, "submit", "--state", state_root, script_path]


def parse_job_id(stdout: str) -> str:
    job_id = stdout.strip()
    if not JOB_ID.fullmatch(job_id):
        raise LocalBackendError(message=f"local submit printed {stdout!r}, not a job id")
    return job_id


def query_argvs(job_ids: Iterable[str], *, state_root: str) -> list[list[str]]:
    """ONE call for every job (``<id>`` or an array task ``<id>_<index>``)."""
    return [[sys.executable, "-m", EXECUTOR, "status", "--state", state_root, *job_ids]]


def sibling_argv(
    names: Iterable[str], *, state_root: str, include_finished: bool = False
) -> list[str]:
    """Jobs PENDING or RUNNING under one of ``names`` (all of them with ``include_finished``,
    which is how an intent without a result finds its job again by name and comment)."""
    flag = ["--all"] if include_finished else []
    return [sys.executable, "-m", EXECUTOR, "siblings", "--state", state_root, *flag, *names]


def cancel_argv(job_ids: Iterable[str], *, state_root: str) -> list[str]:
    """ONE call: cancel jobs (``<id>``) or single array tasks (``<id>_<index>``)."""
    return [sys.executable, "-m", EXECUTOR, "cancel", "--state", state_root, *job_ids]


def task_id(job_id: str, index: int) -> str:
    return f"{job_id}_{index}"


def log_path(job_id: str, *, name: str, index: int | None, log_dir: str = "logs") -> str:
    """Where a task's output goes, relative to the work directory (the executor's naming,
    which is sbatch's ``%x-%j.out`` / ``%x-%A_%a.out``); ``index`` None for a single job."""
    return f"{log_dir}/{name}-{job_id}" + ("" if index is None else f"_{index}") + ".out"


# The type each field of a status record must have (JobState's): the executor writes them so,
# and a value of another type (a hand-edited state file, another version) is not guessed at.
_TEXT_FIELDS = (
    "job_id", "state", "name", "comment", "submitted", "started", "ended", "max_rss", "req_mem",
    "timelimit", "reason",
)  # fmt: skip
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(_TEXT_FIELDS, (str,)),
    "exit_code": (int,),
    "elapsed_s": (int, float),
}


def _fields(record: object) -> dict[str, Any]:
    """The record's JobState fields, each of its type (None allowed but for job_id, state)."""
    if not isinstance(record, Mapping):
        raise LocalBackendError(message=f"local status record {record!r:.200} is not an object")
    values = {k: v for k, v in record.items() if k in _FIELD_TYPES}
    for key, value in values.items():
        ok = isinstance(value, _FIELD_TYPES[key]) and not isinstance(value, bool)
        if not ok and (value is not None or key in ("job_id", "state")):
            raise LocalBackendError(message=f"local status record: {key} {value!r:.80} is no {key}")
    if values.get("state") not in STATES or not isinstance(values.get("job_id"), str):
        raise LocalBackendError(message=f"local status record {dict(record)!r:.200} is not a job")
    return values


def _job_state(record: object) -> JobState:
    values = _fields(record)
    tasks = record.get("tasks") if isinstance(record, Mapping) else None
    own: dict[int, JobState] = {}
    for entry in tasks if isinstance(tasks, list) else ():
        index = entry.get("index") if isinstance(entry, Mapping) else None
        if isinstance(index, int) and not isinstance(index, bool) and entry.get("state") in STATES:
            task = _fields(entry | {"job_id": values["job_id"]})
            own[index] = JobState(**task, task=index)
    return JobState(**values, tasks=MappingProxyType(own))


def _records(stdout: str) -> list[JobState]:
    try:
        jobs = json.loads(stdout)["jobs"]
    except (ValueError, KeyError, TypeError, RecursionError):
        jobs = None
    if not isinstance(jobs, list):
        raise LocalBackendError(message=f"local status printed {stdout[:200]!r}")
    return [_job_state(r) for r in jobs]


def parse_states(outputs: Sequence[str]) -> dict[str, JobState]:
    return {s.job_id: s for out in outputs for s in _records(out)}


def parse_siblings(stdout: str) -> tuple[JobState, ...]:
    return tuple(_records(stdout))


# --- the backend the runner calls: campaignops.backends.local.backend.LocalBackend -----------

# Errors worth retrying: none of its own (the executor is a local process).
TRANSIENT = scheduler.transient()
UNSENT = scheduler.UNSENT  # a submission is retried on none of its own either
PARTIAL_ANSWER: frozenset[int] = frozenset()
NAME = "local"
