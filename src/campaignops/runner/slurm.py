"""The Slurm backend: an sbatch script, and what sbatch, sacct and squeue print.

Checked on a real cluster (Slurm 22.05: dev/slurm_cluster.py, tests/runner/test_slurm.py):

- sbatch reads a double-quoted ``#SBATCH`` value whole (spaces, ``'``, ``#``): free text is
  quoted; ``"``, ``\\`` and control characters are refused, as is any value that could not be
  one argument. Job names are ``[A-Za-z0-9_.+-]``: squeue/sacct take them as a comma list.
- Times: both print local time without a zone; ``SLURM_TIME_FORMAT=%s`` gives epoch seconds
  (a ``%z`` in a longer format is dropped), written back as ISO 8601 in ``zone``.
- ``sacct -j`` (from the epoch, held jobs included), without ``-X``: MaxRSS is on the steps.
  The comment is there only with ``AccountingStoreFlags=job_comment``; squeue shows it anyway.
  sacct lags slurmctld by seconds, per task: a task without its final record (or with the
  ``allocation`` row slurmdbd makes before the job's start record, no Timelimit) is not done.
- ``squeue -r -t all``: every task slurmctld still holds (finished ones for MinJobAge), so a
  job is finished only when sacct has each of them. ``-j <one id>`` fails once the job is
  purged, a list never does: a lone id is given twice.
- sacct shows a batch exit status over 128 less 128 (``exit 138`` is ``10:0``); a death by
  signal is ``0:<signal>``, read here as 128+signal.
- ``--signal=B:USR1@N`` reaches the batch shell only, which passes it on (runner.script); with
  ``--requeue`` the script requeues the job when the task then fails (Slurm holds a requeued
  job ~2 minutes before it may start again).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from types import MappingProxyType

from campaignops import walltime
from campaignops.errors import CampaignError
from campaignops.runner import script
from campaignops.runner.spec import FINISHED, TASK_INDEX, JobSpec, JobState, Resources

WARNING_SIGNAL = script.WARNING_SIGNAL
# Comment last: it may hold "|".
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "MaxRSS", "ReqMem", "Timelimit", "Comment")  # fmt: skip
# Array (or job) id, task index, state, reason, name, submit, start, limit, comment.
SQUEUE_FORMAT = "%F|%K|%T|%r|%j|%V|%S|%l|%k"
EPOCH_TIMES = ["env", "SLURM_TIME_FORMAT=%s"]

_SAFE = re.compile(r"[A-Za-z0-9_.,/:=@%+~-]+")  # needs no quotes on an #SBATCH line
_TEXT = re.compile(r'[^"\\\x00-\x1f\x7f]*')  # can be quoted on an #SBATCH line
_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "job name": (re.compile(r"[A-Za-z0-9_.+-]{1,200}"), "letters, digits and _ . + -"),
    "partition": (re.compile(r"[A-Za-z0-9_.-]+(?:,[A-Za-z0-9_.-]+)*"), "name[,name]"),
    "account": (re.compile(r"[A-Za-z0-9_.-]+"), "letters, digits and _ . -"),
    "qos": (re.compile(r"[A-Za-z0-9_.-]+"), "letters, digits and _ . -"),
    "time": (
        re.compile(r"[0-9]+(?::[0-9]{1,2}){0,2}|[0-9]+-[0-9]{1,2}(?::[0-9]{1,2}){0,2}"),
        "M, M:S, H:M:S, D-H, D-H:M or D-H:M:S",
    ),
    "mem": (re.compile(r"[0-9]+[KMGT]?"), "<n>[K|M|G|T], e.g. 4G"),
    "gpu type": (re.compile(r"[A-Za-z0-9_.-]+"), "letters, digits and _ . -"),
    "constraint": (re.compile(r"[A-Za-z0-9_.&|,:*!()\[\]-]+"), "Slurm's feature expression"),
    "mail user": (re.compile(r"[A-Za-z0-9_.+@-]+(?:,[A-Za-z0-9_.+@-]+)*"), "a@b[,c@d]"),
    "job id": (re.compile(r"[0-9]+(?:_[0-9]+)?"), "<n> or <n>_<task>"),
    "environment name": (re.compile(r"[A-Za-z_][A-Za-z0-9_]*"), "a shell variable name"),
    "work directory": (re.compile(r"/[^%]*"), "an absolute path without %"),
    "log directory": (re.compile(r"[^%]+"), "a path without % (sbatch expands it)"),
}
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
# A finished array's state is that of its worst task, in this order (as on pbs and local).
_WORST_FIRST = ("NODE_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "FAILED", "UNKNOWN")  # fmt: skip
_NO_VALUE = {"", "Unknown", "None", "N/A", "(null)"}
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}
_JOB_ID = re.compile(r"([0-9]+)(?:_(?:([0-9]+)|\[[^\]]*\]))?(?:\+[0-9]+)?(?:\.(.+))?")


class SlurmRefusal(CampaignError):
    """A value that cannot go on an #SBATCH line (or a request Slurm has no words for)."""

    exit_code = 1


class SlurmOutputError(CampaignError):
    """sbatch, sacct or squeue printed something this module cannot read."""


def _valid(what: str, value: object) -> str:
    pattern, form = _FORMS[what]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise SlurmRefusal(message=f"{what} {value!r} cannot go into a Slurm script", hint=form)
    return value


def _text(what: str, value: str) -> str:
    """Free text (a path, the comment) as one #SBATCH value: bare if safe, else double-quoted."""
    if not _TEXT.fullmatch(value):
        raise SlurmRefusal(
            message=f"{what} {value!r} cannot go into a Slurm script",
            hint='no double quote ("), backslash or control character (newline, tab)',
        )
    return value if _SAFE.fullmatch(value) else f'"{value}"'


def _count(what: str, value: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SlurmRefusal(message=f"{what} {value!r} is not a positive count")
    return str(value)


# Resources field → sbatch option, and the form its value must have ("" = a positive count).
_RESOURCE_OPTIONS = (
    ("partition", "partition", "partition"), ("account", "account", "account"),
    ("qos", "qos", "qos"), ("time", "time", "time"), ("nodes", "nodes", ""),
    ("ntasks", "ntasks", ""), ("cpus", "cpus-per-task", ""), ("mem", "mem", "mem"),
    ("gpus", "gres", ""), ("constraint", "constraint", "constraint"),
)  # fmt: skip


def _resources(res: Resources) -> list[str]:
    if res.queue is not None or res.filesystems is not None:
        raise SlurmRefusal(
            message="resources.queue and resources.filesystems are PBS's: Slurm has neither",
            hint="on Slurm use resources.partition (and resources.constraint for features)",
        )
    if res.gpu_type is not None and res.gpus is None:
        raise SlurmRefusal(message="resources.gpu_type without resources.gpus")
    kind = f"{_valid('gpu type', res.gpu_type)}:" if res.gpu_type else ""
    out = []
    for field, option, form in _RESOURCE_OPTIONS:
        value = getattr(res, field)
        if value is not None:
            text = _valid(form, value) if form else _count(field, value)
            out.append(f"--{option}=gpu:{kind}{text}" if field == "gpus" else f"--{option}={text}")
    return out


def _directives(spec: JobSpec) -> list[str]:
    pattern = "%x-%A_%a.out" if spec.is_array else "%x-%j.out"
    output = posixpath.join(_valid("log directory", spec.log_dir), pattern)
    out = [
        f"--job-name={_valid('job name', spec.name)}",
        f"--output={_text('log directory', output)}",
        f"--chdir={_text('work directory', _valid('work directory', spec.workdir))}",
    ]
    if spec.is_array:
        cap = "" if spec.max_parallel is None else f"%{_count('max_parallel', spec.max_parallel)}"
        out.append(f"--array=0-{len(spec.tasks) - 1}{cap}")
    if spec.after:
        out.append("--dependency=afterok:" + ":".join(_valid("job id", j) for j in spec.after))
    out.append("--mail-type=END,FAIL")
    if spec.mail_user:
        out.append(f"--mail-user={_valid('mail user', spec.mail_user)}")
    if spec.warning_seconds is not None:
        seconds = _count("warning_seconds", spec.warning_seconds)
        if spec.warning_seconds > 0xFFFF:  # sbatch keeps the offset in 16 bits
            raise SlurmRefusal(message=f"warning_seconds {seconds} is over 65535")
        out.append(f"--signal=B:{WARNING_SIGNAL}@{seconds}")
    if spec.requeue:
        out.append("--requeue")
    if spec.comment:
        out.append(f"--comment={_text('comment', spec.comment)}")
    # The limit from seconds, in three fields: sbatch reads a two-field H:M as minutes:seconds.
    limit = None if spec.time_s is None else walltime.for_slurm(spec.time_s)
    return [*out, *_resources(dataclasses.replace(spec.resources, time=limit))]


def render(spec: JobSpec) -> str:
    """The complete batch script: #SBATCH lines, then task ``$CAMPAIGN_TASK_INDEX`` verbatim."""
    if not spec.tasks:
        raise SlurmRefusal(message=f"job {spec.name!r} has no task", hint="plan a target")
    for index, command in enumerate(spec.tasks):
        if not command.strip() or "\x00" in command:
            raise SlurmRefusal(message=f"task {index} has no command (or holds a NUL byte)")
    warned = spec.warning_seconds is not None
    requeue = 'scontrol requeue "$SLURM_JOB_ID"' if warned and spec.requeue else None
    return "\n".join(
        [
            "#!/bin/bash",
            # sbatch reads #SBATCH lines up to the first command: every one comes first.
            *(f"#SBATCH {d}" for d in _directives(spec)),
            "# Rendered by campaignops from a committed manifest: change that, not this.",
            "set -euo pipefail",
            f'export {TASK_INDEX}="${{SLURM_ARRAY_TASK_ID:-0}}"',
            *(
                f"export {_valid('environment name', k)}={shlex.quote(v)}"
                for k, v in sorted(spec.env.items())
            ),
            *script.body(
                spec.tasks,
                warned=warned,
                on_warned_failure=requeue,
                outputs=spec.outputs,
                preconditions=spec.preconditions,
            ),
            "",
        ]
    )


def submit_argv(script_path: str) -> list[str]:
    return ["sbatch", "--parsable", script_path]


_PARSABLE = re.compile(r"([0-9]+)(?:;[A-Za-z0-9_.-]+)?")
_SUBMITTED = re.compile(r"Submitted batch job ([0-9]+)(?: on cluster [A-Za-z0-9_.-]+)?")


def parse_job_id(stdout: str) -> str:
    """The job id in whatever sbatch printed: ``--parsable``'s ``<id>`` or ``<id>;<cluster>``
    on a line of its own, or ``Submitted batch job <id>`` (a site wrapper that drops
    --parsable), with any banner lines a site's job_submit plugin or wrapper adds around it.
    Exactly one id must be found: two would mean the output is not what we think."""
    found: list[str] = []
    for line in stdout.splitlines():
        text = line.strip()
        match = _PARSABLE.fullmatch(text) or _SUBMITTED.search(text)
        if match is not None:
            found.append(match[1])
    if len(set(found)) != 1:
        raise SlurmOutputError(message=f"sbatch printed {stdout[:200]!r}, not one job id")
    return found[0]


def _ids(job_ids: Iterable[str]) -> str:
    ids = [_valid("job id", j) for j in job_ids]
    # squeue -j with one id asks for that job alone and fails once it is purged; a list never.
    return ",".join(ids * 2 if len(ids) == 1 else ids)


def query_argvs(job_ids: Iterable[str]) -> list[list[str]]:
    """ONE sacct (every job ever, steps included) and ONE squeue (what slurmctld still holds,
    finished tasks too, one line per array task: it knows a task has ended before sacct does)."""
    ids = _ids(job_ids)
    fields = ",".join(SACCT_FIELDS)
    return [
        [*EPOCH_TIMES, "sacct", "-P", "-n", f"--format={fields}", "-j", ids],
        [*EPOCH_TIMES, "squeue", "-h", "-r", "-t", "all", "-o", SQUEUE_FORMAT, "-j", ids],
    ]


def sibling_argv(names: Iterable[str]) -> list[str]:
    """ONE squeue: the live tasks (one line each) of every job of this user, whatever its name.
    The no_sibling gate matches them to targets by job id through the ledger, and by name for
    jobs another clone submitted."""
    del names  # matched by the gate; the argument keeps every backend's signature
    return [*EPOCH_TIMES, "squeue", "-h", "-r", "--me", "-o", SQUEUE_FORMAT]


def parse_live(stdout: str) -> tuple[JobState, ...]:
    """sibling_argv's answer: each job with its PENDING or RUNNING tasks in ``tasks``."""
    out = []
    for job in parse_states(["", stdout]).values():
        live = {i: t for i, t in job.tasks.items() if t.state in ("PENDING", "RUNNING")}
        if job.state in ("PENDING", "RUNNING"):
            out.append(dataclasses.replace(job, tasks=MappingProxyType(live)))
    return tuple(out)


def lookup_argvs(names: Iterable[str], *, since: str = "now-30days") -> list[list[str]]:
    """Every job under ``names``, finished or not (a lost or unknown result record), in
    query_argvs' formats so parse_states reads them: sacct since ``since`` (steps included, for
    MaxRSS), and squeue for held or dependent jobs, which sacct's window leaves out."""
    wanted = ",".join(_valid("job name", n) for n in names)
    fields = ",".join(SACCT_FIELDS)
    return [
        [*EPOCH_TIMES, "sacct", "-P", "-n", f"--format={fields}", f"--name={wanted}",
         f"--starttime={since}"],
        [*EPOCH_TIMES, "squeue", "-h", "-r", "-t", "all", "-o", SQUEUE_FORMAT, f"--name={wanted}"],
    ]  # fmt: skip


def cancel_argv(job_ids: Iterable[str]) -> list[str]:
    """ONE scancel: whole jobs (``123``) or single array tasks (``123_4``)."""
    return ["scancel", *(_valid("job id", j) for j in job_ids)]


def task_id(job_id: str, index: int) -> str:
    return f"{job_id}_{index}"


def log_path(job_id: str, *, name: str, index: int | None, log_dir: str = "logs") -> str:
    """The ``--output`` the script asks for (``%x-%j.out``, an array task ``%x-%A_%a.out``),
    relative to the work directory; ``index`` None for a single job."""
    return f"{log_dir}/{name}-{job_id}" + ("" if index is None else f"_{index}") + ".out"


def _row_id(text: str) -> tuple[str, str | None, str | None]:
    """``12``, ``12_3``, ``12_[4-9%2]``, ``12.batch`` → (array/job id, task, step)."""
    match = _JOB_ID.fullmatch(text.strip())
    if match is None:
        raise SlurmOutputError(message=f"{text!r} is not a Slurm job id")
    return match[1], match[2], match[3]


def _state(text: str) -> str:
    return _STATES.get(text.split(" ")[0].rstrip("+"), "UNKNOWN")  # "CANCELLED by 0"


def _iso(text: str, zone: tzinfo | None) -> str | None:
    if text in _NO_VALUE or not text.isdigit() or text == "0":
        return None
    when = datetime.fromtimestamp(int(text), tz=zone)
    return (when if zone else when.astimezone()).isoformat()


def _seconds(text: str) -> float | None:
    """``[D-][HH:]MM:SS`` → seconds."""
    match = re.fullmatch(r"(?:([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+)", text)
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def _kib(text: str | None) -> float:
    match = re.fullmatch(r"([0-9.]+)([KMGTP]?)", text or "")
    return float(match[1]) * _UNITS[match[2]] if match else -1.0


def _exit(text: str) -> int | None:
    """``3:0`` → 3; ``0:9`` (killed by signal 9) → 137, as a shell reports it."""
    match = re.fullmatch(r"([0-9]+):([0-9]+)", text)
    if match is None:
        return None
    code, sig = int(match[1]), int(match[2])
    return code if code or not sig else 128 + sig


Tasks = dict[str, dict[int, JobState]]  # array/job id → task index (-1: not an array) → state


def _sacct_rows(stdout: str, zone: tzinfo | None) -> Tasks:
    """Allocation rows by array/job id and task; steps lend their MaxRSS."""
    rows: list[tuple[str, str | None, dict[str, str]]] = []
    rss: dict[tuple[str, str | None], str] = {}
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
        elif _kib(f["MaxRSS"]) > _kib(rss.get((job, task))):
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
        worst = next((w for w in _WORST_FIRST if w in states), "COMPLETED")
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
        now = _state(state)
        tasks.setdefault(job, {})[int(task) if task.isdigit() else -1] = JobState(
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


def parse_siblings(stdout: str, names: Iterable[str]) -> tuple[JobState, ...]:
    """Live jobs whose name is one of ``names`` (sibling_argv's output)."""
    wanted = set(names)
    return tuple(j for j in parse_live(stdout) if j.name in wanted)
