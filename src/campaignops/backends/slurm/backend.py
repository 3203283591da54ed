"""The Slurm backend: the sbatch script, and the sbatch, sacct, squeue and scancel calls.

What sacct and squeue answer is read in sacct.py (parse_states, the state map, times and
memory); parse_states and SlurmOutputError are re-exported here, so this module is the whole
``backends.Backend``. Checked on a real cluster (Slurm 22.05: dev/slurm_cluster.py,
tests/runner/test_slurm.py):

- sbatch reads a double-quoted ``#SBATCH`` value whole (spaces, ``'``, ``#``): free text is
  quoted; ``"``, ``\\`` and control characters are refused, as is any value that could not be
  one argument. Job names are ``[A-Za-z0-9_.+-]``: squeue/sacct take them as a comma list.
- Queries run under ``SLURM_TIME_FORMAT=%s`` (epoch seconds: sacct.py says why).
- ``squeue -j <one id>`` fails once the job is purged, a list never does: a lone id is given
  twice.
- ``--signal=B:USR1@N`` reaches the batch shell only, which passes it on (runner.script); with
  ``--requeue`` the script requeues the job when the task then fails (Slurm holds a requeued
  job ~2 minutes before it may start again).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence

from campaignops.backends import command as scheduler
from campaignops.backends import script
from campaignops.backends.slurm import accounting as sacct

# Re-exported: backends.Backend asks this module for parse_states; callers catch one error.
from campaignops.backends.slurm.accounting import SlurmOutputError as SlurmOutputError
from campaignops.backends.slurm.accounting import parse_states as parse_states
from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.jobspec import TASK_INDEX, JobSpec, JobState, Resources, live

NAME = "slurm"
# --time takes D-HH:MM:SS (a two-field value would read as MM:SS: never written).
WALLTIME = walltime.dhms
WARNING_SIGNAL = script.WARNING_SIGNAL
# Errors worth retrying: slurmctld busy or restarting (sbatch/squeue say so in these words).
TRANSIENT = scheduler.transient("unable to contact slurm controller", "communication failure")
# Of those, the submission errors known to come before slurmctld accepted anything (retried):
# no controller took the connection, or slurmctld answered that it made no job record. Its
# "(send failure)", "(receive failure)", "Socket timed out on send/recv operation" may follow
# the job's queueing: an unknown outcome (scheduler.call). Messages as libslurm 22.05 has them.
UNSENT = scheduler.unsent(
    r"unable to contact slurm controller \(connect failure\)", "unable to create job record"
)

PARTIAL_ANSWER: frozenset[int] = frozenset()  # sacct and squeue answer with exit 0
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


class SlurmRefusal(CampaignError):
    """A value that cannot go on an #SBATCH line (or a request Slurm has no words for)."""

    exit_code = 1


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
    if res.gpu_type is not None and not res.gpus:
        raise SlurmRefusal(
            message="resources.gpu_type without resources.gpus",
            hint="ask for resources.gpus too (the GPUs per node), or drop resources.gpu_type",
        )
    kind = f"{_valid('gpu type', res.gpu_type)}:" if res.gpu_type else ""
    out = []
    for field, option, form in _RESOURCE_OPTIONS:
        value = getattr(res, field)
        if field == "gpus" and value == 0 and not isinstance(value, bool):
            continue  # no GPUs asked for (a CPU smoke of a GPU job): no --gres at all
        if value is not None:
            text = _valid(form, value) if form else _count(field, value)
            out.append(f"--{option}=gpu:{kind}{text}" if field == "gpus" else f"--{option}={text}")
    return out


def unsayable(res: Resources) -> SlurmRefusal | None:
    """The refusal ``render`` gives for this request's #SBATCH lines, else None (the time
    limit aside: render writes it from seconds)."""
    try:
        _resources(dataclasses.replace(res, time=None))
    except SlurmRefusal as exc:
        return exc
    return None


def unnamable(name: str) -> SlurmRefusal | None:
    """The refusal ``render`` gives for this job name (--job-name), else None."""
    try:
        _valid("job name", name)
    except SlurmRefusal as exc:
        return exc
    return None


def _directives(spec: JobSpec) -> list[str]:
    pattern = "%x-%A_%a.out" if spec.is_array else "%x-%j.out"
    output = posixpath.join(_valid("log directory", spec.log_dir), pattern)
    out = [
        f"--job-name={_valid('job name', spec.name)}",
        f"--output={_text('log directory', output)}",
        f"--chdir={_text('work directory', _valid('work directory', spec.workdir))}",
    ]
    if spec.array is not None:
        if spec.max_parallel is not None:
            _count("max_parallel", spec.max_parallel)
        out.append(f"--array={spec.array}")
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
    limit = None if spec.time_s is None else WALLTIME(spec.time_s)
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
            *script.spec_body(spec, warned=warned, on_warned_failure=requeue),
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
    fields = ",".join(sacct.SACCT_FIELDS)
    return [
        [*EPOCH_TIMES, "sacct", "-P", "-n", f"--format={fields}", "-j", ids],
        [*EPOCH_TIMES, "squeue", "-h", "-r", "-t", "all", "-o", sacct.SQUEUE_FORMAT, "-j", ids],
    ]


def sibling_argv(names: Iterable[str]) -> list[str]:
    """ONE squeue: the live tasks (one line each) of every job of this user, whatever its name.
    The no_sibling gate matches them to targets by job id through the ledger, and by name for
    jobs another clone submitted."""
    del names  # matched by the gate; the argument keeps every backend's signature
    return [*EPOCH_TIMES, "squeue", "-h", "-r", "--me", "-o", sacct.SQUEUE_FORMAT]


def parse_live(stdout: str) -> tuple[JobState, ...]:
    """sibling_argv's answer: each job with its PENDING or RUNNING tasks in ``tasks``."""
    return live(parse_states(["", stdout]).values())


def lookup_argvs(names: Iterable[str], *, since: str = "now-30days") -> list[list[str]]:
    """Every job under ``names``, finished or not (a lost or unknown result record), in
    query_argvs' formats so parse_states reads them: sacct since ``since`` (steps included, for
    MaxRSS), and squeue for held or dependent jobs, which sacct's window leaves out."""
    wanted = ",".join(_valid("job name", n) for n in names)
    fields = ",".join(sacct.SACCT_FIELDS)
    return [
        [*EPOCH_TIMES, "sacct", "-P", "-n", f"--format={fields}", f"--name={wanted}",
         f"--starttime={since}"],
        [*EPOCH_TIMES, "squeue", "-h", "-r", "-t", "all", "-o", sacct.SQUEUE_FORMAT, f"--name={wanted}"],
    ]  # fmt: skip


def lookup(names: Sequence[str], call: scheduler.Runs) -> dict[str, JobState]:
    """Every job under ``names``, finished or not: the ids by name (sacct's window misses a job
    held until it was cancelled, so states by name can be partial), then the states by id, as
    every refresh asks for them."""
    found = parse_states([call(a).stdout for a in lookup_argvs(names)])
    if not found:
        return {}
    return parse_states([call(a).stdout for a in query_argvs(sorted(found))])


def cancel_argv(job_ids: Iterable[str]) -> list[str]:
    """ONE scancel: whole jobs (``123``) or single array tasks (``123_4``)."""
    return ["scancel", *(_valid("job id", j) for j in job_ids)]


def task_id(job_id: str, index: int) -> str:
    return f"{job_id}_{index}"


def log_path(job_id: str, *, name: str, index: int | None, log_dir: str = "logs") -> str:
    """The ``--output`` the script asks for (``%x-%j.out``, an array task ``%x-%A_%a.out``),
    relative to the work directory; ``index`` None for a single job."""
    return f"{log_dir}/{name}-{job_id}" + ("" if index is None else f"_{index}") + ".out"


def parse_siblings(stdout: str, names: Iterable[str]) -> tuple[JobState, ...]:
    """Live jobs whose name is one of ``names`` (sibling_argv's output)."""
    wanted = set(names)
    return tuple(j for j in parse_live(stdout) if j.name in wanted)
