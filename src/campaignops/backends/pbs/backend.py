"""The PBS Pro backend (ALCF Polaris and Crux): the qsub script, and the qsub, qstat, qselect
and qdel calls.

What ``qstat -f -F json`` answers is read in qstat.py (job_state, fold, parse_states); its
parse_states and PbsOutputError are re-exported here, so this module is the whole
``backends.Backend``.

Sources: OpenPBS (github.com/openpbs/openpbs: man pages, C source), ALCF's user guides
(github.com/argonne-lcf/user-guides, docs/running-jobs/), real output in tests/runner/recorded/.
Where PBS differs from Slurm:

- Name: at most 230 characters (``PBS_MAXJOBNAME``; 236 before OpenPBS 19) of
  ``[A-Za-z0-9_.+-]`` (``check_job_name``), the first a letter or digit (pbs_job_attributes.7B;
  qsub itself takes ``_ . + -`` first too: ``chk_alpha`` is 0 for a QueueJob request), refused
  here rather than by qsub ("illegal -N value").
- No ``--comment``: ``-v CAMPAIGN_COMMENT=<words joined by ':'>`` puts the ledger id and commit
  in ``Variable_List``, which ``qstat -f -F json`` prints and parse_states reads back.
- ``-J 0-<N-1>%C``: a range needs two indices (``parse_subjob_index``), so one task is a plain
  job; ``%C`` is ``max_run_subjobs`` (OpenPBS #2038, 2020; ALCF documents ``-J 0-99%10``).
  qsub refuses ``-r n`` with ``-J``: arrays are ``-r y``, single jobs ``-r y``/``-r n`` as asked.
- ``select=<nodes>[:ncpus][:ngpus][:gputype][:mem][:<constraint>]`` per node, ``place=scatter``;
  ALCF queues default the chunk to ``system=polaris``/``crux``, a constraint is appended as
  written. No QoS in PBS (refused). ``ntasks`` is not rendered: ``mpiprocs`` would change
  ``$PBS_NODEFILE``, which ALCF scripts count as nodes; ranks are ``mpiexec -n``'s business.
- Logs ``-o <workdir>/<log_dir>/ -j oe -k doe``: one ``<job id>.OU`` per job or subjob, written
  in place (ALCF enforces ``-k doe``). PBS does not create the directory.
- No ``--signal``: at the walltime PBS sends SIGTERM, then SIGKILL after ``kill_delay``. The
  script arms a timer sending SIGUSR1 to its shell ``warning_seconds`` before the limit, as
  ``--signal=B:USR1@N`` does, counted from the script's start (late by the prologue).
- Job ids stay whole (``3117548.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov``): qstat's JSON
  keys jobs by the whole id, and ``afterok`` takes it as is.
- qstat prints ``ctime(3)`` times in its own zone: queries run it with ``TZ=UTC0``.
- ``qstat -x -t``: finished jobs too, and each subjob of an array (qstat.py reads them).
- qstat refuses ``-u`` with ``-F json`` (qstat.c "conflict"): siblings come from the whole
  queue (``qstat -f -F json -t``), and a job whose result record was lost is found by name with
  ``qselect -x -N <name>`` (ids only), then queried like any other.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence
from datetime import timezone, tzinfo

from campaignops.backends import command as scheduler
from campaignops.backends import script
from campaignops.backends.pbs import accounting as qstat

# Re-exported: backends.Backend asks this module for parse_states; callers catch one error.
from campaignops.backends.pbs.accounting import PbsOutputError as PbsOutputError
from campaignops.backends.pbs.accounting import parse_states as parse_states
from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.jobspec import TASK_INDEX, JobSpec, JobState, Resources, live

NAME = "pbs"
# walltime= takes HH:MM:SS with hours past 24 (no days field).
WALLTIME = walltime.hms
# Errors worth retrying: the server busy or restarting (qsub/qstat say so in these words).
TRANSIENT = scheduler.transient("pbs_connect", "cannot connect to server")
# A qsub that could not connect sent nothing (retried); any other failure of its connection
# (End of File, a protocol error, a timeout) may follow the job's queueing: an unknown outcome.
UNSENT = scheduler.unsent("pbs_connect", "cannot connect to server")

# qstat exits with PBSE_UNKJOBID's low byte (15001 & 255 = 153) when an id was purged from
# the server's history, and still prints the jobs it knows (qstat.c, pbs_error.h).
PBSE_UNKJOBID = 15001
PARTIAL_ANSWER = frozenset({PBSE_UNKJOBID & 0xFF})
NAME_MAX = 230
WARNING_SIGNAL = "USR1"  # the local backend's too
QSTAT = ["env", "TZ=UTC0", "qstat"]

_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_MEM = re.compile(r"([0-9]+)(?:\.([0-9]+))?([KMGT]?)B?", re.IGNORECASE)
_RES = r"[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.+-]+"
# What each value may hold to be one #PBS argument (no space, ',' or quote), and how to write it.
_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    "account": (re.compile(r"[A-Za-z0-9_.+-]+"), "letters, digits and _ . + -"),
    "queue": (re.compile(r"[A-Za-z0-9_.+-]+"), "letters, digits and _ . + -"),
    "gpu_type": (re.compile(r"[A-Za-z0-9_.+-]+"), "letters, digits and _ . + -"),
    "filesystems": (re.compile(r"[A-Za-z0-9_]+(?::[A-Za-z0-9_]+)*"), "fs[:fs...], e.g. home:eagle"),
    "constraint": (re.compile(f"{_RES}(?::{_RES})*"), "name=value[:name=value], e.g. system=crux"),
    "mail address": (re.compile(r"[A-Za-z0-9_.+@-]+(?:,[A-Za-z0-9_.+@-]+)*"), "a@b[,c@d]"),
    "job id": (re.compile(r"[0-9]+(?:\[\])?(?:\.[A-Za-z0-9][A-Za-z0-9.-]*)?"), "<n>[.<server>]"),
    "comment word": (re.compile(r"[A-Za-z0-9_.+-]+"), "letters, digits and _ . + -"),
    # No ':' (qsub reads host:path) and no space: the path is one -o argument.
    "log directory": (re.compile(r"/[A-Za-z0-9_.@+=/~-]*"), "an absolute path, no space or ':'"),
    "environment name": (re.compile(r"[A-Za-z_][A-Za-z0-9_]*"), "a shell variable name"),
}


class PbsRefusal(CampaignError):
    """A job PBS Pro would reject (name, walltime, resources), refused before qsub sees it."""

    exit_code = 1


# --- rendering ------------------------------------------------------------------------------


def _valid(what: str, value: str) -> str:
    pattern, form = _FORMS[what]
    if not pattern.fullmatch(value):
        raise PbsRefusal(message=f"{what} {value!r} cannot go into a PBS job", hint=f"use {form}")
    return value


def check_name(name: str) -> str:
    """The job name, if PBS Pro takes it for ``-N``; else PbsRefusal saying which rule failed."""
    rules = [
        (len(name) <= NAME_MAX, f"is {len(name)} characters long; PBS takes at most {NAME_MAX}"),
        (name[:1].isascii() and name[:1].isalnum(), "must start with a letter or digit (PBS -N)"),
        (bool(_NAME.fullmatch(name)), "may hold only letters, digits and _ . + -"),
    ]
    broken = [why for ok, why in rules if not ok]
    if broken:
        raise PbsRefusal(
            message=f"job name {name!r} " + "; ".join(broken),
            hint="rename the campaign, target or stage so <campaign>.<target>.<stage> fits",
        )
    return name


def pbs_size(text: str) -> str:
    """A manifest size (``4G``, ``1.5G``; no unit is MB, as for Slurm) as PBS's ``4gb``."""
    match = _MEM.fullmatch(text)
    if match is None:
        raise PbsRefusal(message=f"memory {text!r} is not a size", hint="e.g. 4G or 512M")
    units = "KMGT"
    value = float(f"{match[1]}.{match[2] or 0}")
    step = units.index((match[3] or "M").upper())
    while value != int(value) and step > 0:  # PBS sizes are whole numbers: 1.5G is 1536mb
        value, step = value * 1024, step - 1
    if value != int(value):
        raise PbsRefusal(message=f"memory {text!r} is not a whole number of KB", hint="e.g. 4G")
    return f"{int(value)}{units[step].lower()}b"


def _chunk(res: Resources) -> list[str]:
    """``select`` and ``place``, or nothing when the job asks for nothing the queue lacks."""
    if res.qos:
        raise PbsRefusal(message=f"qos {res.qos!r}: PBS Pro has no QoS", hint="drop it for PBS")
    parts = [
        f"ncpus={res.cpus}" if res.cpus is not None else "",
        f"ngpus={res.gpus}" if res.gpus is not None else "",
        f"gputype={_valid('gpu_type', res.gpu_type)}" if res.gpu_type else "",
        f"mem={pbs_size(res.mem)}" if res.mem else "",
        _valid("constraint", res.constraint) if res.constraint else "",
    ]
    extra = [p for p in parts if p]
    if res.nodes is None and not extra:
        return []
    return ["-l select=" + ":".join([str(res.nodes or 1), *extra]), "-l place=scatter"]


def _asked(res: Resources) -> list[str]:
    """The request's lines before the walltime: account, queue, select."""
    queue = res.queue or res.partition  # Slurm's partition is PBS's queue
    return [
        *([f"-A {_valid('account', res.account)}"] if res.account else []),
        *([f"-q {_valid('queue', queue)}"] if queue else []),
        *_chunk(res),
    ]


def _filesystems(res: Resources) -> list[str]:
    return [f"-l filesystems={_valid('filesystems', res.filesystems)}"] if res.filesystems else []


def unsayable(res: Resources) -> PbsRefusal | None:
    """The refusal ``render`` gives for this request's #PBS lines, else None (the walltime
    aside: render writes it from seconds)."""
    try:
        _asked(res)
        _filesystems(res)
    except PbsRefusal as exc:
        return exc
    return None


def unnamable(name: str) -> PbsRefusal | None:
    """The refusal ``render`` gives for this job name (-N), else None."""
    try:
        check_name(name)
    except PbsRefusal as exc:
        return exc
    return None


def _directives(spec: JobSpec) -> list[str]:
    res = spec.resources
    log_dir = posixpath.normpath(posixpath.join(spec.workdir, spec.log_dir))
    if spec.max_parallel is not None and spec.max_parallel < 1:
        raise PbsRefusal(message=f"max_parallel {spec.max_parallel} < 1", hint="use 1 or more")
    words = [_valid("comment word", w) for w in spec.comment.split()]
    after = ":".join(_valid("job id", j) for j in spec.after)
    lines = [
        f"-N {check_name(spec.name)}",
        *_asked(res),
        *([f"-l walltime={WALLTIME(spec.time_s)}"] if spec.time_s is not None else []),
        *_filesystems(res),
        *([f"-J {spec.array}"] if spec.array is not None else []),
        *([f"-W depend=afterok:{after}"] if after else []),
        f"-o {_valid('log directory', log_dir)}/",
        "-j oe",
        "-k doe",
        *(["-m ae", f"-M {_valid('mail address', spec.mail_user)}"] if spec.mail_user else []),
        "-r y" if spec.requeue or spec.is_array else "-r n",
        *([f"-v {qstat.COMMENT_VAR}={':'.join(words)}"] if words else []),
    ]
    return [f"#PBS {line}" for line in lines]


def _warning_timer(spec: JobSpec) -> list[str]:
    limit = spec.time_s
    if not spec.warning_seconds or limit is None:
        return []
    if spec.warning_seconds >= limit:
        raise PbsRefusal(
            message=f"warning {spec.warning_seconds} s is not before the {limit} s time limit",
            hint="ask for a warning shorter than the time limit",
        )
    return [
        f"# PBS has no --signal: SIG{WARNING_SIGNAL} to this shell {spec.warning_seconds} s"
        " before the limit.",
        f"( sleep {limit - spec.warning_seconds} && kill -s {WARNING_SIGNAL} $$ )"
        " </dev/null >/dev/null 2>&1 &",
    ]


def render(spec: JobSpec) -> str:
    """The qsub script: ``#PBS`` lines, then task ``$CAMPAIGN_TASK_INDEX`` run verbatim."""
    if not spec.tasks:
        raise PbsRefusal(message=f"job {spec.name!r} has no tasks", hint="plan a target")
    env = [
        f"export {_valid('environment name', k)}={shlex.quote(v)}"
        for k, v in sorted(spec.env.items())
    ]
    return "\n".join(
        [
            "#!/bin/bash",
            # Every #PBS line before any comment: ALCF's known issues warn that PBS may read a
            # comment among the directives as one more directive.
            *_directives(spec),
            "# Rendered by campaignops from a committed manifest: change that, not this.",
            # Strict mode before cd: a missing checkout must stop the job, not run it elsewhere.
            "set -euo pipefail",
            f"cd {shlex.quote(spec.workdir)}",
            f'export {TASK_INDEX}="${{PBS_ARRAY_INDEX:-0}}"',
            *env,
            *_warning_timer(spec),
            *script.spec_body(spec, warned=spec.warning_seconds is not None),
            "",
        ]
    )


# --- calling qsub, qstat, qselect -----------------------------------------------------------


def submit_argv(script_path: str) -> list[str]:
    return ["qsub", script_path]


def parse_job_id(stdout: str) -> str:
    """The id qsub printed (``<n>.<server>``, ``<n>[].<server>`` for an array), kept whole."""
    ids = [
        line.strip() for line in stdout.splitlines() if _FORMS["job id"][0].fullmatch(line.strip())
    ]
    if len(ids) != 1:
        raise PbsOutputError(message=f"qsub printed {stdout[:200]!r}, not one job id")
    return ids[0]


def query_argvs(job_ids: Iterable[str]) -> list[list[str]]:
    """ONE qstat for every job: finished ones too (``-x``), arrays with their subjobs (``-t``).

    None for no job: qstat without ids would list the whole server's two weeks of history. An
    id qstat no longer knows is left out of its JSON and makes it exit non-zero (qstat.c).
    """
    ids = list(job_ids)
    return [[*QSTAT, "-x", "-f", "-F", "json", "-t", *ids]] if ids else []


def sibling_argv(names: Iterable[str]) -> list[str]:
    """ONE qstat of the whole queue (qstat has no name filter); parse_siblings keeps ``names``.
    ``-t``: an array comes with its subjobs, so each target's own task state is known."""
    del names  # the filter is parse_siblings'; the argument keeps every backend's signature
    return [*QSTAT, "-f", "-F", "json", "-t"]


def lookup_argvs(names: Iterable[str]) -> list[list[str]]:
    """Ids of every job under each name, finished ones too (qselect takes one ``-N``)."""
    return [["qselect", "-x", "-N", check_name(name)] for name in names]


def parse_lookup(outputs: Sequence[str]) -> list[str]:
    """qselect's ids, one a line. Each must be a job id: the list becomes qstat's arguments,
    where a line such as ``-u x`` would be an option."""
    ids = [line.strip() for out in outputs for line in out.splitlines() if line.strip()]
    bad = [i for i in ids if not _FORMS["job id"][0].fullmatch(i)]
    if bad:
        raise PbsOutputError(message=f"qselect printed {bad[0][:200]!r}, not a PBS job id")
    return ids


def lookup(names: Sequence[str], call: scheduler.Runs) -> dict[str, JobState]:
    """Every job under ``names``, finished or not: qselect -x -N per name, then one qstat."""
    ids = parse_lookup([call(a).stdout for a in lookup_argvs(names)])
    return parse_states([call(a).stdout for a in query_argvs(ids)]) if ids else {}


def parse_live(stdout: str) -> tuple[JobState, ...]:
    """sibling_argv's answer: each queued or running job with its live subjobs in ``tasks``."""
    return live(parse_states([stdout]).values())


def cancel_argv(job_ids: Iterable[str]) -> list[str]:
    """ONE qdel: whole jobs (``123.server``, an array ``123[].server``) or subjobs
    (``123[4].server``)."""
    ids = list(job_ids)
    bad = [j for j in ids if not (_FORMS["job id"][0].fullmatch(j) or qstat.SUBJOB_ID.fullmatch(j))]
    if bad:
        raise PbsOutputError(message=f"{bad[0]!r} is not a PBS job or subjob id")
    return ["qdel", *ids]


def task_id(job_id: str, index: int) -> str:
    """An array's subjob: ``123[].server`` → ``123[4].server``."""
    number, brackets, server = job_id.partition("[]")
    if not brackets:
        raise PbsOutputError(message=f"{job_id!r} is not an array job id (<n>[].<server>)")
    return f"{number}[{index}]{server}"


def log_path(job_id: str, *, name: str, index: int | None, log_dir: str = "logs") -> str:
    """``-o <log_dir>/``: PBS names the file ``<job or subjob id>.OU`` (not the job name)."""
    del name  # every backend's signature; PBS names logs by id alone
    return f"{log_dir}/{job_id if index is None else task_id(job_id, index)}.OU"


def parse_siblings(
    stdout: str, names: Iterable[str], *, zone: tzinfo = timezone.utc
) -> tuple[JobState, ...]:
    """Queued or running jobs (Q H W T R E B S U) whose Job_Name is one of ``names``."""
    wanted = set(names)
    jobs = parse_states([stdout], zone=zone).values()
    return tuple(j for j in jobs if j.name in wanted and j.state in ("PENDING", "RUNNING"))
