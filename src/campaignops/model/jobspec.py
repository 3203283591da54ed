"""What the runner hands a backend: a scheduler-neutral job, and what a backend reports back.

Backends are modules with a few narrow functions (see BACKEND_API in docs/architecture.md):
render(spec) -> script text, submit_argv(script) -> argv, parse_job_id(stdout) -> id,
query_argvs(ids) -> argvs, parse_states(outputs) -> {id: JobState}.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from campaignops.model import walltime

# The variable every rendered script sets to the array index (0-based) before running a task.
TASK_INDEX = "CAMPAIGN_TASK_INDEX"
# Each task's config fingerprint (the one the smoke gate compares), in its environment: a task
# that skips a cell it finds finished can tell a finished cell of another config.
CONFIG_VAR = "CAMPAIGN_CONFIG"


@dataclass(frozen=True)
class Resources:
    """A manifest's `resources` (schema: manifest.schema.json#/$defs/resources)."""

    partition: str | None = None
    queue: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = (
        None  # as written: read it through JobSpec.time_s (campaignops.model.walltime)
    )
    nodes: int | None = None
    ntasks: int | None = None
    cpus: int | None = None
    mem: str | None = None  # e.g. "4G"
    gpus: int | None = None
    gpu_type: str | None = None
    constraint: str | None = None
    filesystems: str | None = None


def job_name(campaign: str, target: str, stage: str) -> str:
    """A job's name on every backend: ``<campaign>.<target>.<stage>``, the target a phase's or
    the manifest's stem for an array of several (runner/plan.py)."""
    return f"{campaign}.{target}.{stage}"


@dataclass(frozen=True)
class Precondition:
    """One of a manifest's top-level ``preconditions`` (schema: ``$defs/precondition``):
    checked by the rendered script before the task starts (types: taskfiles.PRECONDITION_TYPES)."""

    type: str
    path: str


@dataclass(frozen=True)
class BoxSettings:
    """The experiment-queue keys that only a box's own executor can run (ssh backends: the
    executor on the box reads them from job.json; a scheduler gives each task its own GPUs and
    needs none of them). None: the key is absent."""

    gpus: tuple[int, ...] | None = None  # the manifest's GPU index list, one task per GPU
    gpu_free_threshold_mib: int | None = None  # a GPU is free below this memory.used
    conda: str | None = None  # the environment each task runs in
    conda_hook: str | None = None  # a conda root, conda.sh, the conda program or an eval string
    oom_attempts: int | None = None  # oom_retry.max_attempts (2 or more)
    oom_delay_s: float | None = None  # oom_retry.delay
    # One per task: its run length in the manifest's own unit (a line's or args' epochs, else
    # 1), how the ssh backend divides an array across its boxes (campaignops.model.splitting).
    costs: tuple[float, ...] | None = None
    # The experiment-queue's ``ssh: ALIAS``: run only on the page's instance of that name (or
    # host); the MAN checks refuse an alias the page does not list.
    instance: str | None = None

    def record(self) -> dict[str, object]:
        """The settings that are set, as the ssh backend's script line carries them."""
        return {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in self.__dict__.items()
            if v is not None
        }


@dataclass(frozen=True)
class JobSpec:
    """One submission: a single job (one task) or ONE array job (several tasks).

    ``tasks`` holds one shell command per array index; the rendered script runs
    ``tasks[$CAMPAIGN_TASK_INDEX]`` from ``workdir``. Commands are shell text composed by the
    runner from committed manifests (never from template answers).
    """

    name: str  # <campaign>.<target>.<stage>
    workdir: str  # absolute path of the campaign checkout on the submit host
    tasks: tuple[str, ...]
    resources: Resources = Resources()
    max_parallel: int | None = None  # the array's %C
    after: tuple[str, ...] = ()  # afterok dependencies (job ids)
    mail_user: str | None = None  # mail on END and FAIL
    comment: str = ""  # "<ledger_id> <commit>": lets status find a job whose result was lost
    log_dir: str = "logs"  # relative to workdir
    warning_seconds: int | None = None  # signal the batch shell this long before the limit
    requeue: bool = False
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # One per task (aligned with ``tasks``) or empty: the path that must exist and be non-empty
    # once the task exited 0, relative to ``workdir``; ``${NAME}`` references expand.
    outputs: tuple[str | None, ...] = ()
    preconditions: tuple[Precondition, ...] = ()  # job-wide, checked before each task
    # One per task (aligned with ``tasks``) or empty: preconditions whose paths held the task's
    # own placeholders (``{N}``, ``${N}``), filled from its grid values and args at planning.
    task_preconditions: tuple[tuple[Precondition, ...], ...] = ()
    box: BoxSettings = BoxSettings()  # what only an ssh backend's box executor runs
    # One per task (aligned with ``tasks``) or empty: the target's config fingerprint, exported
    # to the task as ${CAMPAIGN_CONFIG} (set by submit once the fingerprints are known).
    configs: tuple[str, ...] = ()

    @property
    def is_array(self) -> bool:
        return len(self.tasks) > 1

    @property
    def array(self) -> str | None:
        """The array's indices and cap, ``0-N[%C]`` (Slurm's --array, PBS's -J, the ledger's
        ``array``), or None for a job of one task. Backends check ``max_parallel`` first."""
        if not self.is_array:
            return None
        cap = f"%{self.max_parallel}" if self.max_parallel else ""
        return f"0-{len(self.tasks) - 1}{cap}"

    @cached_property
    def time_s(self) -> int | None:
        """The time limit in seconds, parsed once (walltime.parse); None: the backend's default.

        Every backend renders its limit from this, never from ``resources.time``'s text.
        """
        return None if self.resources.time is None else walltime.parse(self.resources.time)


@dataclass(frozen=True)
class JobState:
    """What a scheduler says of one job (for an array: of the whole array, folded), or of one
    array task (then ``task`` is its index and ``tasks`` is empty).

    ``tasks`` holds each array task's own state by index (a single job: empty, or index 0): the
    runner judges every target by its own task, never by the array's fold.
    """

    job_id: str
    state: str  # one of states.STATES
    exit_code: int | None = None
    name: str | None = None
    comment: str | None = None
    submitted: str | None = None  # ISO 8601 with zone
    started: str | None = None
    ended: str | None = None
    elapsed_s: float | None = None
    max_rss: str | None = None
    req_mem: str | None = None
    cpu_time_s: float | None = None  # CPU time used, all CPUs together (sacct TotalCPU)
    alloc_cpus: int | None = None  # CPUs held (sacct AllocCPUS)
    alloc_gpus: int | None = None  # GPUs held (sacct AllocTRES gres/gpu)
    timelimit: str | None = None
    reason: str | None = None  # why it ended so, when the backend or the runner knows it
    task: int | None = None
    tasks: Mapping[int, JobState] = field(default_factory=lambda: MappingProxyType({}))
    # A box executor's retries within the job (oom_retry on a box): the task's attempt now, and
    # each earlier attempt it ran again, oldest first, as a task of its own (its ``attempt``).
    attempt: int | None = None
    tries: tuple[JobState, ...] = ()


def live(jobs: Iterable[JobState]) -> tuple[JobState, ...]:
    """The jobs still queued or running, each with only its queued or running tasks: what
    holds a target now (the no_sibling gate's view of a sibling query's answer)."""
    out = []
    for job in jobs:
        if job.state in ("PENDING", "RUNNING"):
            now = {i: t for i, t in job.tasks.items() if t.state in ("PENDING", "RUNNING")}
            out.append(dataclasses.replace(job, tasks=MappingProxyType(now)))
    return tuple(out)
