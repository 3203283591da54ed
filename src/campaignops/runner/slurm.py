"""The Slurm backend: an sbatch script, and what sbatch, sacct and squeue print.

Checked on a real cluster (Slurm 22.05, dev/slurm_cluster.py; tests/runner/test_slurm.py):

- ``#SBATCH`` values: sbatch reads a double-quoted value whole (spaces, ``'`` and ``#`` kept),
  so free text is quoted; ``"``, ``\\`` and control characters are refused, as is anything
  else a value could not carry (a job name is ``[A-Za-z0-9_.+-]``: squeue/sacct take names as
  a comma list and print them ``|``-separated).
- Times: sacct and squeue print local times without a zone; ``SLURM_TIME_FORMAT=%s`` makes
  them print epoch seconds (a ``%z`` in a longer format is dropped), read back in ``zone``.
- ``sacct -j`` selects from the epoch, pending and held jobs included; no ``-X``: the memory
  high-water mark (MaxRSS) is on the steps (``.batch``, ``.0``…), the rest on the allocation.
  The comment is only stored with ``AccountingStoreFlags=job_comment``: squeue shows it anyway.
- squeue prints live jobs only; ``-j <one id>`` fails once the job has left slurmctld's memory
  (MinJobAge), a list never does: a lone id is given twice.
- Arrays: sacct has one row per task (``12_3``; pending ones folded as ``12_[4-9%2]``),
  squeue one per running task plus one for the pending rest; all fold into the array id.
- ``--signal=B:USR1@N`` signals the batch shell only: the script passes it to the task's
  process group and, with ``--requeue``, requeues the job if the task then stops unsuccessfully
  (Slurm holds a requeued job about two minutes before it is eligible again).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence
from datetime import datetime, tzinfo

from campaignops.errors import CampaignError
from campaignops.runner.spec import FINISHED, TASK_INDEX, JobSpec, JobState, Resources

WARNING_SIGNAL = "USR1"
# Comment last: it may hold "|".
SACCT_FIELDS = ("JobID", "JobName", "State", "ExitCode", "Submit", "Start", "End", "Elapsed", "MaxRSS", "ReqMem", "Timelimit", "Comment")  # fmt: skip
SQUEUE_FORMAT = "%F|%T|%r|%j|%V|%S|%l|%k"  # array id, state, reason, name, submit, start, limit
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
_TASK_END = f"""    *)
      echo "campaign: this job has no task ${TASK_INDEX}" >&2
      exit 64
      ;;
  esac
}}
"""
# The task runs in a process group of its own (set -m while it starts) so that the warning
# reaches all of its processes. The trap ends wait early with 128+10: then wait again (a child
# reaped meanwhile keeps its status until waited for, so kill -0 cannot tell).
_WARNED_RUN = f"""# Slurm signals only this shell before the time limit: pass it to the task's processes.
campaign_warned=0
campaign_pid=
trap 'campaign_warned=1; campaign_woken=1; [ -z "$campaign_pid" ] || kill -{WARNING_SIGNAL} -- "-$campaign_pid" 2>/dev/null || true' {WARNING_SIGNAL}
set -m
campaign_task &
campaign_pid=$!
set +m
while :; do
  campaign_woken=0
  wait "$campaign_pid" && campaign_status=0 || campaign_status=$?
  [ "$campaign_woken" = 1 ] && [ "$campaign_status" = 138 ] || break
done
"""
_REQUEUE = """if [ "$campaign_warned" = 1 ] && [ "$campaign_status" != 0 ]; then
  echo "campaign: stopped at the time-limit warning (status $campaign_status): requeued" >&2
  scontrol requeue "$SLURM_JOB_ID"
fi
"""


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
    return [*out, *_resources(spec.resources)]


def render(spec: JobSpec) -> str:
    """The complete batch script for ``spec``: #SBATCH lines, then the task of this index."""
    if not spec.tasks:
        raise SlurmRefusal(message=f"job {spec.name!r} has no task")
    head = [
        "#!/bin/bash",
        *(f"#SBATCH {d}" for d in _directives(spec)),
        "set -euo pipefail",
        *(
            f"export {_valid('environment name', k)}={shlex.quote(v)}"
            for k, v in sorted(spec.env.items())
        ),
        f'export {TASK_INDEX}="${{SLURM_ARRAY_TASK_ID:-0}}"',
        "campaign_task() {",
        f'  case "${TASK_INDEX}" in',
    ]
    for index, command in enumerate(spec.tasks):
        if not command.strip() or "\x00" in command:
            raise SlurmRefusal(message=f"task {index} has no command (or holds a NUL byte)")
        # As-is: continuation lines keep their own text (a here-document must not move).
        head += [f"    {index})", f"      {command}", "      ;;"]
    if spec.warning_seconds is None:
        tail = "campaign_task\n"
    else:
        tail = _WARNED_RUN + (_REQUEUE if spec.requeue else "") + 'exit "$campaign_status"\n'
    return "\n".join(head) + "\n" + _TASK_END + tail


def submit_argv(script_path: str) -> list[str]:
    return ["sbatch", "--parsable", script_path]


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``<id>`` or, on a multi-cluster site, ``<id>;<cluster>``."""
    match = re.fullmatch(r"\s*([0-9]+)(?:;[A-Za-z0-9_.-]+)?\s*", stdout)
    if match is None:
        raise SlurmOutputError(message=f"sbatch printed {stdout[:200]!r}, not a job id")
    return match[1]


def _ids(job_ids: Iterable[str]) -> str:
    ids = [_valid("job id", j) for j in job_ids]
    # squeue -j with one id asks for that job alone and fails once it is purged; a list never.
    return ",".join(ids * 2 if len(ids) == 1 else ids)


def query_argvs(job_ids: Iterable[str]) -> list[list[str]]:
    """ONE sacct (every job ever, steps included) and ONE squeue (live jobs: state, reason)."""
    ids = _ids(job_ids)
    fields = ",".join(SACCT_FIELDS)
    return [
        [*EPOCH_TIMES, "sacct", "-P", "-n", f"--format={fields}", "-j", ids],
        [*EPOCH_TIMES, "squeue", "-h", "-o", SQUEUE_FORMAT, "-j", ids],
    ]


def sibling_argv(names: Iterable[str]) -> list[str]:
    """ONE squeue: live jobs under any of ``names``, whoever submitted them."""
    wanted = ",".join(_valid("job name", n) for n in names)
    return [*EPOCH_TIMES, "squeue", "-h", "-o", SQUEUE_FORMAT, f"--name={wanted}"]


def lookup_argvs(names: Iterable[str], *, since: str = "now-30days") -> list[list[str]]:
    """Every job under ``names`` (a lost result record): sacct since ``since``, and squeue for
    held or dependent jobs, which sacct's time window leaves out until they are eligible."""
    wanted = ",".join(_valid("job name", n) for n in names)
    return [
        ["sacct", "-P", "-n", "-X", "--format=JobID", f"--name={wanted}", f"--starttime={since}"],
        ["squeue", "-h", "-o", "%F", f"--name={wanted}"],
    ]


def parse_lookup(outputs: Sequence[str]) -> list[str]:
    """The array/job ids in lookup_argvs' outputs, once each, in order."""
    ids = [_row_id(line.split("|")[0])[0] for out in outputs for line in out.split()]
    return list(dict.fromkeys(ids))


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


def _sacct_rows(stdout: str, zone: tzinfo | None) -> dict[str, list[tuple[int, JobState]]]:
    """Allocation rows by array/job id as (task index, state); steps lend their MaxRSS."""
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
    tasks: dict[str, list[tuple[int, JobState]]] = {}
    for job, task, f in rows:
        state = _state(f["State"])
        done = state in FINISHED
        tasks.setdefault(job, []).append((-1 if task is None else int(task), JobState(
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
            timelimit=f["Timelimit"] or None,
        )))  # fmt: skip
    # A short job's row can come before slurmdbd has its start record (~5 s): name
    # "allocation", no Timelimit, ReqMem "16?". Such a job reads as not yet known.
    partial = {job for job, _, f in rows if not f["Timelimit"]}
    return {job: t for job, t in tasks.items() if job not in partial}


def fold(tasks: Sequence[tuple[int, JobState]]) -> JobState:
    """One job, or a whole array from its tasks: the worst state when all have finished, with
    the exit code of its first task in that state; RUNNING while any runs; else PENDING."""
    ordered = [s for _, s in sorted(tasks, key=lambda t: t[0])]
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
    )


def _squeue_rows(stdout: str, zone: tzinfo | None) -> dict[str, list[tuple[JobState, str]]]:
    rows: dict[str, list[tuple[JobState, str]]] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        row = line.split("|", 7)
        if len(row) != 8:
            raise SlurmOutputError(message=f"squeue row {line[:200]!r} has not 8 fields")
        job, state, reason, name, submit, start, limit, comment = row
        live = _state(state)
        rows.setdefault(job, []).append((JobState(
            job_id=job,
            state=live,
            name=name or None,
            comment=None if comment in _NO_VALUE else comment,
            submitted=_iso(submit, zone),
            started=_iso(start, zone) if live == "RUNNING" else None,
            timelimit=limit or None,
        ), reason))  # fmt: skip
    return rows


def parse_states(outputs: Sequence[str], *, zone: tzinfo | None = None) -> dict[str, JobState]:
    """Every job and array in query_argvs' outputs (sacct's, then squeue's), by id.

    squeue decides while a job is live (sacct lags, and leaves out jobs not yet eligible);
    sacct gives the rest. Times are ISO 8601 in ``zone`` (None: this machine's zone).
    """
    states = {job: fold(rows) for job, rows in _sacct_rows(outputs[0], zone).items()}
    live = _squeue_rows(outputs[1], zone) if len(outputs) > 1 else {}
    for job, rows in live.items():
        now = fold([(0, s) for s, _ in rows])
        if now.state not in ("PENDING", "RUNNING"):
            continue  # squeue's view of a job that has just ended: sacct's is complete
        known = states.get(job)
        states[job] = now if known is None else dataclasses.replace(
            known, state=now.state, exit_code=None, ended=None, started=known.started or now.started
        )  # fmt: skip
    return states


def parse_reasons(stdout: str) -> dict[str, str]:
    """squeue's reason per live job or array (``Dependency``, ``DependencyNeverSatisfied``)."""
    reasons: dict[str, str] = {}
    for job, rows in _squeue_rows(stdout, None).items():
        waiting = [r for s, r in rows if s.state == "PENDING"] or [r for _, r in rows]
        reasons[job] = waiting[0]
    return reasons


def parse_siblings(stdout: str, names: Iterable[str]) -> tuple[JobState, ...]:
    """Jobs PENDING or RUNNING whose name is one of ``names`` (sibling_argv's output)."""
    wanted = set(names)
    found = parse_states(["", stdout]).values()
    return tuple(j for j in found if j.name in wanted and j.state in ("PENDING", "RUNNING"))
