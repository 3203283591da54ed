"""The qsub script for Grid Engine (Son of Grid Engine 8.1, Univa/Altair, OGS).

Checked on a real cell (dev/gridengine_cell.py, tests/backends/gridengine/):

- ``-t 1-N -tc C``: Grid Engine's task ids start at 1; the script sets the campaign's 0-based
  ``$CAMPAIGN_TASK_INDEX`` to ``$SGE_TASK_ID - 1`` (a single job's SGE_TASK_ID is
  ``undefined``: index 0).
- ``-o <log dir>/$JOB_NAME.o$JOB_ID[.$TASK_ID] -j y``: one log per task, in a directory that
  must exist when the task starts (else the task goes to ``Eqw``); the runner makes it.
- ``-l h_rt`` is the kill; a warning asks for ``-l s_rt`` that much earlier (SIGUSR1 to the job,
  the same signal as Slurm's ``--signal=B:USR1@N``), and, where the page says ``notify: true``,
  ``-notify`` (SIGUSR2 before a kill by qdel, passed on as SIGUSR1; the job is then never
  rescheduled: on the real cell a qdel'd task that checkpointed and exited 99 was rescheduled).
- Memory: the page's ``memory_resource`` (``h_vmem`` enforced, ``mem_free``/``virtual_free``
  only scheduled), per slot as Grid Engine counts it: the manifest's job memory divided by
  ``cpus`` (the slots of ``-pe <parallel_environment> <cpus>``).
- Exit 99 means "reschedule" and 100 "error state, held until qdel" to Grid Engine: a task's
  own 99 or 100 leaves the script as 199 or 200 (states.py reads them back), except 99 after a
  warning with ``requeue`` asked for, which reschedules the job as Slurm's requeue does.
- afterok: ``-hold_jid`` waits for the parent's end whatever its exit, so every task of a job
  writes its verdict (``<log dir>/.afterok/<job>.<task>``, and ``<job>.tasks``) and a child
  checks its parents' verdicts before its own task starts (exit 95, ``campaign: afterok``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from campaignops.backends import script
from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.jobspec import TASK_INDEX, JobSpec, Resources

MEMORY_RESOURCES = ("h_vmem", "mem_free", "virtual_free", "none")
AFTEROK_EXIT = 95  # a parent did not succeed: the child's task did not start
AFTEROK_DIR = ".afterok"
# Grid Engine's own meanings of a job's exit status (sge_execd): reschedule, error state.
RESCHEDULE_EXIT = 99
ERROR_STATE_EXIT = 100
SHIFT = 100  # a task's 99/100 leaves the script as 199/200

_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    # qstat and qacct read a name as a pattern (* ? [ ]), and qsub refuses / : @ \ and spaces.
    "job name": (re.compile(r"[A-Za-z][A-Za-z0-9_.+-]{0,199}"), "a letter, then letters, digits, _ . + -"),
    "queue": (re.compile(r"[A-Za-z0-9_.@-]+(?:,[A-Za-z0-9_.@-]+)*"), "queue[,queue], e.g. all.q"),
    "account": (re.compile(r"[A-Za-z0-9_.-]+"), "letters, digits and _ . -"),
    "parallel environment": (re.compile(r"[A-Za-z0-9_.-]+"), "a PE name, e.g. smp"),
    "mail address": (re.compile(r"[A-Za-z0-9_.+@-]+(?:,[A-Za-z0-9_.+@-]+)*"), "a@b[,c@d]"),
    "job id": (re.compile(r"[0-9]{1,12}"), "a Grid Engine job number"),
    "path": (re.compile(r"/[A-Za-z0-9_.@+=/~-]*"), "an absolute path without spaces or : $ %"),
    "comment word": (re.compile(r"[A-Za-z0-9_.+-]+"), "letters, digits and _ . + -"),
    "environment name": (re.compile(r"[A-Za-z_][A-Za-z0-9_]*"), "a shell variable name"),
}  # fmt: skip
_MEM = re.compile(r"([0-9]{1,12})(?:\.([0-9]{1,6}))?([KMGT]?)B?", re.IGNORECASE)


class GridEngineRefusal(CampaignError):
    """A job Grid Engine would reject (name, memory, a value qsub splits), refused before qsub."""

    exit_code = 1


@dataclass(frozen=True)
class PageSettings:
    """What the backend page says about the site's Grid Engine (generic-gridengine.md)."""

    memory_resource: str = "h_vmem"
    parallel_environment: str = "smp"
    notify: bool = False


def valid(what: str, value: str) -> str:
    pattern, form = _FORMS[what]
    if not pattern.fullmatch(value):
        raise GridEngineRefusal(
            message=f"{what} {value!r} cannot go into a Grid Engine job", hint=f"use {form}"
        )
    return value


def megabytes(text: str) -> float:
    """A manifest size (``4G``, ``1.5G``, ``512M``; no unit is MB, as for Slurm) in MiB."""
    match = _MEM.fullmatch(text)
    if match is None:
        raise GridEngineRefusal(message=f"memory {text!r} is not a size", hint="e.g. 4G or 512M")
    value = float(f"{match[1]}.{match[2] or 0}")
    power = "KMGT".index((match[3] or "M").upper()) - 1
    return value * float(1024**power)


def _memory(spec: JobSpec, settings: PageSettings, slots: int) -> list[str]:
    if not spec.resources.mem or settings.memory_resource == "none":
        return []
    per_slot = max(1, int(-(-megabytes(spec.resources.mem) // slots)))  # rounded up
    return [f"-l {settings.memory_resource}={per_slot}M"]


def _refuse_unknown(res: Resources) -> None:
    for field, why in (
        ("qos", "Grid Engine has no QoS"),
        ("constraint", "write a site complex as the page says, not a Slurm feature"),
        ("filesystems", "PBS's -l filesystems has no Grid Engine counterpart"),
        ("nodes", "Grid Engine places slots, not nodes: use cpus (the -pe slots)"),
        ("gpu_type", "GPUs are a site complex on Grid Engine: the page says which"),
    ):
        if getattr(res, field) not in (None, 0):
            raise GridEngineRefusal(
                message=f"resources.{field} {getattr(res, field)!r}: {why}",
                hint="drop it from the manifest for this backend",
            )
    if res.gpus:
        raise GridEngineRefusal(
            message=f"resources.gpus {res.gpus}: GPUs are a site-defined complex on Grid Engine",
            hint="drop gpus for this backend, or submit by hand with your site's -l gpu=N",
        )


def log_dir(spec: JobSpec) -> str:
    return valid("path", posixpath.normpath(posixpath.join(spec.workdir, spec.log_dir)))


def unsayable(res: Resources) -> GridEngineRefusal | None:
    """The refusal ``directives`` gives for this request's own keys, else None (what the page
    sets, the time limit and the planner's values aside): what campaign check asks (MAN018)."""
    try:
        _refuse_unknown(res)
        queue = res.queue or res.partition
        if queue:
            valid("queue", queue)
        if res.account:
            valid("account", res.account)
        if res.mem:
            megabytes(res.mem)
    except GridEngineRefusal as exc:
        return exc
    return None


def unnamable(name: str) -> GridEngineRefusal | None:
    """The refusal ``directives`` gives for this job name (-N), else None."""
    try:
        valid("job name", name)
    except GridEngineRefusal as exc:
        return exc
    return None


def directives(spec: JobSpec, settings: PageSettings) -> list[str]:
    _refuse_unknown(spec.resources)
    res = spec.resources
    slots = res.cpus or 1
    logs = log_dir(spec)
    tail = ".$TASK_ID" if spec.is_array else ""
    queue = res.queue or res.partition
    words = [valid("comment word", w) for w in spec.comment.split()]
    if spec.max_parallel is not None and spec.max_parallel < 1:
        raise GridEngineRefusal(message=f"max_parallel {spec.max_parallel} < 1", hint="use 1+")
    lines = [
        f"-N {valid('job name', spec.name)}",
        "-S /bin/bash",
        "-cwd",
        f"-o {logs}/$JOB_NAME.o$JOB_ID{tail}",
        "-j y",
        *([f"-t 1-{len(spec.tasks)}"] if spec.is_array else []),
        *([f"-tc {spec.max_parallel}"] if spec.is_array and spec.max_parallel else []),
        *([f"-q {valid('queue', queue)}"] if queue else []),
        *([f"-A {valid('account', res.account)}"] if res.account else []),
        *_slots(settings, slots),
        *([f"-l h_rt={walltime.hms(spec.time_s)}"] if spec.time_s is not None else []),
        *_warning(spec),
        *(["-notify"] if settings.notify and spec.warning_seconds else []),
        *_memory(spec, settings, slots),
        *([f"-hold_jid {','.join(valid('job id', j) for j in spec.after)}"] if spec.after else []),
        *(["-m ea", f"-M {valid('mail address', spec.mail_user)}"] if spec.mail_user else []),
        "-r y" if spec.requeue else "-r n",
        *([f"-ac CAMPAIGN_COMMENT={':'.join(words)}"] if words else []),
    ]
    return [f"#$ {line}" for line in lines]


def _slots(settings: PageSettings, slots: int) -> list[str]:
    pe = valid("parallel environment", settings.parallel_environment)
    return [f"-pe {pe} {slots}"] if slots > 1 else []


def _warning(spec: JobSpec) -> list[str]:
    limit, warn = spec.time_s, spec.warning_seconds
    if not warn or limit is None:
        return []
    if warn >= limit:
        raise GridEngineRefusal(
            message=f"warning {warn} s is not before the {limit} s time limit",
            hint="ask for a warning shorter than the time limit",
        )
    return [f"-l s_rt={walltime.hms(limit - warn)}"]


def afterok_check(spec: JobSpec) -> list[str]:
    """Before the task: every task of every parent must have left verdict 0 (see module doc)."""
    if not spec.after:
        return []
    where = shlex.quote(f"{log_dir(spec)}/{AFTEROK_DIR}")
    fail = f'echo "campaign: afterok: $1 $2: this task did not start" >&2; exit {AFTEROK_EXIT}'
    return [
        "campaign_afterok() {",
        f'  local n v i; n=$(cat {where}/"$1".tasks 2>/dev/null) || n=',
        f'  [ -n "$n" ] || {{ set -- "parent job $1" "left no verdict (killed, cancelled or '
        f'never started)"; {fail}; }}',
        "  for ((i = 1; i <= n; i++)); do",
        f'    v=$(cat {where}/"$1.$i" 2>/dev/null) || v="no verdict (killed or cancelled)"',
        f'    [ "$v" = 0 ] || {{ set -- "parent job $1 task $i" "ended with $v"; {fail}; }}',
        "  done",
        "}",
        *(f"campaign_afterok {valid('job id', j)}" for j in spec.after),
    ]


def _ending(spec: JobSpec) -> list[str]:
    """After the task: the verdict for children, then an exit status Grid Engine reads as one."""
    where = shlex.quote(f"{log_dir(spec)}/{AFTEROK_DIR}")
    task = '"$SGE_TASK_ID"' if spec.is_array else "1"
    requeue = '[ "${campaign_requeue:-0}${campaign_deleting:-0}" = 10 ] && exit 99'
    return [
        *([requeue] if spec.requeue and spec.warning_seconds else []),
        f"mkdir -p {where} && printf '%s\\n' {len(spec.tasks)} > {where}/\"$JOB_ID\".tasks && "
        f'printf \'%s\\n\' "$campaign_status" > {where}/"$JOB_ID".{task} || true',
        f'case "$campaign_status" in {RESCHEDULE_EXIT}|{ERROR_STATE_EXIT})',
        '  echo "campaign: the task exited $campaign_status, which Grid Engine reads as its own;'
        f' the job exits $((campaign_status + {SHIFT})) instead" >&2',
        f"  campaign_status=$((campaign_status + {SHIFT}));;",
        "esac",
        'exit "$campaign_status"',
    ]


def render(spec: JobSpec, settings: PageSettings) -> str:
    """The qsub script: ``#$`` lines, then task ``$CAMPAIGN_TASK_INDEX`` run verbatim."""
    if not spec.tasks:
        raise GridEngineRefusal(message=f"job {spec.name!r} has no tasks", hint="plan a target")
    index = "$((SGE_TASK_ID - 1))" if spec.is_array else "0"
    warned = spec.warning_seconds is not None
    notified = warned and settings.notify
    requeue = "campaign_requeue=1" if warned and spec.requeue else None
    body = script.spec_body(spec, warned=warned, on_warned_failure=requeue)
    if body[-1] != 'exit "$campaign_status"':  # script.body's last line, replaced by _ending
        raise CampaignError(message="runner.script.body no longer ends in its exit line")
    return "\n".join(
        [
            "#!/bin/bash",
            *directives(spec, settings),
            "# Rendered by campaignops from a committed manifest: change that, not this.",
            "set -euo pipefail",
            f"cd {shlex.quote(spec.workdir)}",
            f'export {TASK_INDEX}="{index}"',
            *(
                f"export {valid('environment name', k)}={shlex.quote(v)}"
                for k, v in sorted(spec.env.items())
            ),
            # -notify: SIGUSR2 comes the queue's notify time (60 s) before qdel's SIGKILL: the
            # task gets its warning, and the job is not rescheduled (a delete must win).
            *(["trap 'campaign_deleting=1; kill -USR1 $$' USR2"] if notified else []),
            *afterok_check(spec),
            *body[:-1],
            *_ending(spec),
            "",
        ]
    )
