"""The PBS Pro backend (ALCF Polaris and Crux): a qsub script, and what qsub and qstat print.

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
- Per-task truth: ``qstat -x -t`` lists each subjob (``<n>[<i>].<server>``, job_state X once
  ended) with its own ``Exit_status``, ``stime`` and ``obittime``; parse_states keeps them as
  the array's ``tasks``, and folds them into the array's state.
- qstat refuses ``-u`` with ``-F json`` (qstat.c "conflict"): siblings come from the whole
  queue (``qstat -f -F json -t``), and a job whose result record was lost is found by name with
  ``qselect -x -N <name>`` (ids only), then queried like any other.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from types import MappingProxyType
from typing import Any

from campaignops import walltime
from campaignops.errors import CampaignError
from campaignops.runner import script
from campaignops.runner.spec import FINISHED, TASK_INDEX, JobSpec, JobState

NAME_MAX = 230
COMMENT_VAR = "CAMPAIGN_COMMENT"
WARNING_SIGNAL = "USR1"  # the local backend's too
QSTAT = ["env", "TZ=UTC0", "qstat"]
SUBSTATE_TERMINATED = 91  # job.h: deleted (qdel) before or while it ran
SUBSTATE_FAILED = 93  # job.h: ended on a PBS error (Exit_status < 0)

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
_SUBJOB = re.compile(r"([0-9]+)\[([0-9]+)\](.*)")
_CTIME = re.compile(r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) +([0-9]{1,2}) ([0-9:]{8}) ([0-9]{4})")
_MONTHS = {  # ctime(3)'s month names (C locale), as qstat prints them
    "Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6,
    "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12,
}  # fmt: skip
_SIZE = re.compile(r"([0-9]+)(b|kb|mb|gb|tb|pb)", re.IGNORECASE)
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
# An array's state is that of its worst subjob, in this order (as on the local backend).
_WORST_FIRST = (
    "NODE_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "FAILED", "UNKNOWN",
)  # fmt: skip


class PbsRefusal(CampaignError):
    """A job PBS Pro would reject (name, walltime, resources), refused before qsub sees it."""

    exit_code = 1


class PbsOutputError(CampaignError):
    """qsub or qstat printed something this backend cannot read."""

    exit_code = 2


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


def _seconds(clock: str) -> int:
    """qstat's ``HH:MM:SS`` (hours past 24 kept) in seconds."""
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return (hours * 60 + minutes) * 60 + seconds


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


def _chunk(spec: JobSpec) -> list[str]:
    """``select`` and ``place``, or nothing when the job asks for nothing the queue lacks."""
    res = spec.resources
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


def _directives(spec: JobSpec) -> list[str]:
    res = spec.resources
    queue = res.queue or res.partition  # Slurm's partition is PBS's queue
    log_dir = posixpath.normpath(posixpath.join(spec.workdir, spec.log_dir))
    if spec.max_parallel is not None and spec.max_parallel < 1:
        raise PbsRefusal(message=f"max_parallel {spec.max_parallel} < 1", hint="use 1 or more")
    cap = f"%{spec.max_parallel}" if spec.max_parallel else ""
    words = [_valid("comment word", w) for w in spec.comment.split()]
    after = ":".join(_valid("job id", j) for j in spec.after)
    lines = [
        f"-N {check_name(spec.name)}",
        *([f"-A {_valid('account', res.account)}"] if res.account else []),
        *([f"-q {_valid('queue', queue)}"] if queue else []),
        *_chunk(spec),
        *([f"-l walltime={walltime.for_pbs(spec.time_s)}"] if spec.time_s is not None else []),
        *([f"-l filesystems={_valid('filesystems', res.filesystems)}"] if res.filesystems else []),
        *([f"-J 0-{len(spec.tasks) - 1}{cap}"] if spec.is_array else []),
        *([f"-W depend=afterok:{after}"] if after else []),
        f"-o {_valid('log directory', log_dir)}/",
        "-j oe",
        "-k doe",
        *(["-m ae", f"-M {_valid('mail address', spec.mail_user)}"] if spec.mail_user else []),
        "-r y" if spec.requeue or spec.is_array else "-r n",
        *([f"-v {COMMENT_VAR}={':'.join(words)}"] if words else []),
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
            *script.body(
                spec.tasks,
                warned=spec.warning_seconds is not None,
                outputs=spec.outputs,
                preconditions=spec.preconditions,
            ),
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
    return [line.strip() for out in outputs for line in out.splitlines() if line.strip()]


def cancel_argv(job_ids: Iterable[str]) -> list[str]:
    """ONE qdel: whole jobs (``123.server``, an array ``123[].server``) or subjobs
    (``123[4].server``)."""
    ids = list(job_ids)
    bad = [j for j in ids if not (_FORMS["job id"][0].fullmatch(j) or _SUBJOB.fullmatch(j))]
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


# --- reading qstat -f -F json ---------------------------------------------------------------


def _jobs(stdout: str) -> dict[str, dict[str, Any]]:
    if not stdout.strip():
        return {}  # qstat prints its JSON last (qstat.c): nothing printed, nothing known
    try:
        # strict=False: qstat does not escape control characters in values (openpbs#2541).
        doc = json.loads(stdout, strict=False)
    except ValueError as exc:
        raise PbsOutputError(message=f"qstat printed no JSON: {exc}") from None
    jobs = doc.get("Jobs", {}) if isinstance(doc, dict) else None  # no "Jobs": none matched
    if not isinstance(jobs, dict):
        raise PbsOutputError(message=f"qstat JSON has no job table: {stdout[:200]!r}")
    return {k: v for k, v in jobs.items() if isinstance(v, dict)}


def _table(job: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = job.get(key)
    return value if isinstance(value, dict) else {}


def _int(value: object) -> int | None:
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _iso(value: object, zone: tzinfo) -> str | None:
    """A ctime(3) date (``Tue Oct  4 21:23:20 2022``) in ``zone`` as ISO 8601 with its offset."""
    match = _CTIME.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None or match[1] not in _MONTHS:
        return None  # a date this parser does not know reads as unknown, not as an error
    hour, minute, second = (int(part) for part in match[3].split(":"))
    when = datetime(int(match[4]), _MONTHS[match[1]], int(match[2]), hour, minute, second)
    return when.replace(tzinfo=zone).isoformat()


def _clock_s(value: object) -> int | None:
    ok = isinstance(value, str) and re.fullmatch(r"[0-9]+:[0-5][0-9]:[0-5][0-9]", value)
    return _seconds(value) if ok and isinstance(value, str) else _int(value)


def _slurm_clock(total: int | None) -> str | None:
    return None if total is None or total < 0 else walltime.for_slurm(total)


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
        state = next((s for s in _WORST_FIRST if s in states), "COMPLETED")
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
            match = _SUBJOB.fullmatch(key)
            if match:
                parent = f"{match[1]}[]{match[3]}"
                task = dataclasses.replace(job_state(key, job, zone), task=int(match[2]))
                subjobs.setdefault(parent, []).append(task)
            else:
                records[key] = job_state(key, job, zone)
    return {k: fold(s, subjobs[k]) if k in subjobs else s for k, s in records.items()}


def parse_siblings(
    stdout: str, names: Iterable[str], *, zone: tzinfo = timezone.utc
) -> tuple[JobState, ...]:
    """Queued or running jobs (Q H W T R E B S U) whose Job_Name is one of ``names``."""
    wanted = set(names)
    jobs = parse_states([stdout], zone=zone).values()
    return tuple(j for j in jobs if j.name in wanted and j.state in ("PENDING", "RUNNING"))
