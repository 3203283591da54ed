"""The Grid Engine backend (``kind: gridengine``): the qsub, qstat, qacct and qdel calls.

One object per checkout and page (``GridEngineBackend(root, name)``): the page says which memory
resource the site enforces, which parallel environment gives slots, and whether jobs get
``-notify``. Everything Grid Engine does its own way lives in this folder: the script
(render.py), qstat's XML (qstatxml.py), qacct's records (qacct.py), their fold (states.py).

- Job ids: ``qsub -terse`` prints ``12`` or ``12.1-3:1``; the job is ``12``, its task t
  (1-based) ``12.t`` (qdel takes it); the campaign's index i is task i + 1.
- Status: ONE ``qstat -u <user> -xml`` (live tasks) and ONE ``qacct -o <user> -j`` (ended
  ones), both under ``TZ=UTC0``: they print local times without a zone. qacct exits 1 with
  "No jobs running since startup" before the cell's first job ended: an answer (no records).
- A task deleted while it waited leaves no qacct record: qstat ``-s z`` still lists it among
  the qmaster's finished jobs (``finished_jobs``, 100 by default), and it never got a log:
  CANCELLED. A zombie with a log is UNKNOWN until its qacct record arrives.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends import command as scheduler
from campaignops.backends.gridengine import render as rendering
from campaignops.backends.gridengine import states
from campaignops.backends.gridengine.qstatxml import GridEngineOutputError
from campaignops.core.errors import UsageError
from campaignops.model import backendpage
from campaignops.model.jobspec import JobSpec, JobState, live

NAME = "gridengine"
# qmaster down or busy: the clients' commlib words (qsub/qstat/qdel print them).
TRANSIENT = scheduler.transient("commlib error", "unable to contact qmaster", "got no connection")
UNSENT = scheduler.unsent("can't connect to service", "commlib error: got select error")
PARTIAL_ANSWER = frozenset({1})  # qacct's "No jobs running since startup" (on stdout)
TZ_UTC = ["env", "TZ=UTC0"]
_TERSE = re.compile(r"([0-9]{1,12})(?:\.[0-9]+-[0-9]+:[0-9]+)?")
_TASK = re.compile(r"([0-9]{1,12})(?:\.([0-9]{1,9}))?")


def _user() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def settings(page: Mapping[str, Any] | None, name: str) -> rendering.PageSettings:
    """The page's memory_resource, parallel_environment and notify (defaults when absent)."""
    page = page or {}
    memory = page.get("memory_resource", "h_vmem")
    if memory not in rendering.MEMORY_RESOURCES:
        raise UsageError(
            message=f"{backendpage.path_of(name)}: memory_resource {memory!r} is not one of "
            + ", ".join(rendering.MEMORY_RESOURCES),
            hint="write the resource your site enforces (qconf -sc lists the complexes)",
        )
    pe = page.get("parallel_environment", "smp")
    notify = page.get("notify", False)
    if not isinstance(pe, str) or not isinstance(notify, bool):
        raise UsageError(
            message=f"{backendpage.path_of(name)}: parallel_environment must be a name, notify "
            "true/false",
            hint="qconf -spl lists your site's parallel environments",
        )
    return rendering.PageSettings(memory_resource=memory, parallel_environment=pe, notify=notify)


class GridEngineBackend:
    """``backends.Backend`` for one Grid Engine page."""

    NAME = NAME
    TRANSIENT = TRANSIENT
    UNSENT = UNSENT
    PARTIAL_ANSWER = PARTIAL_ANSWER

    def __init__(self, root: Path, name: str) -> None:
        self._settings = settings(backend_base.page(root, name), name)
        self._root = root

    def _started(self, job: str, task: int | None, name: str | None) -> bool:
        """A task started once Grid Engine opened its log (-o): a zombie without one was
        deleted while it waited. No name: cannot tell, so it counts as started."""
        index = None if task is None else task - 1
        return name is None or (self._root / self.log_path(job, name=name, index=index)).exists()

    def render(self, spec: JobSpec) -> str:
        return rendering.render(spec, self._settings)

    def submit_argv(self, script_path: str) -> list[str]:
        return ["qsub", "-terse", script_path]

    def parse_job_id(self, stdout: str) -> str:
        """``12`` or ``12.1-3:1`` (an array) on a line of its own: the job number."""
        found = {m[1] for line in stdout.splitlines() if (m := _TERSE.fullmatch(line.strip()))}
        if len(found) != 1:
            raise GridEngineOutputError(message=f"qsub printed {stdout[:200]!r}, not one job id")
        return found.pop()

    def query_argvs(self, job_ids: Sequence[str]) -> list[list[str]]:
        if not job_ids:
            return []
        user = _user()
        # -s prsz: the live jobs and the zombies (ended: run, or deleted while waiting)
        qstat = [*TZ_UTC, "qstat", "-u", user, "-xml", "-s", "prsz"]
        return [qstat, [*TZ_UTC, "qacct", "-o", user, "-j"]]

    def parse_states(self, outputs: Sequence[str]) -> dict[str, JobState]:
        return states.parse_states(outputs, started=self._started)

    def sibling_argv(self, names: Sequence[str]) -> list[str]:
        del names  # the gate matches jobs to targets; qstat has no name filter for a list
        return [*TZ_UTC, "qstat", "-u", _user(), "-xml"]

    def parse_live(self, stdout: str) -> tuple[JobState, ...]:
        return live(states.parse_states([stdout]).values())

    def lookup(self, names: Sequence[str], call: backend_base.Run) -> dict[str, JobState]:
        wanted = {rendering.valid("job name", n) for n in names}
        found = self.parse_states([call(a).stdout for a in self.query_argvs(["*"])])
        return {k: s for k, s in found.items() if s.name in wanted}

    def cancel_argv(self, job_ids: Sequence[str]) -> list[str]:
        """ONE qdel: whole jobs (``12``) or array tasks (``12.3``)."""
        bad = [j for j in job_ids if not _TASK.fullmatch(j)]
        if bad:
            raise GridEngineOutputError(message=f"{bad[0]!r} is not a Grid Engine job or task id")
        return ["qdel", *job_ids]

    def task_id(self, job_id: str, index: int) -> str:
        return states.task_ref(job_id, index + 1)

    def log_path(self, job_id: str, *, name: str, index: int | None) -> str:
        """``-o <log_dir>/$JOB_NAME.o$JOB_ID[.$TASK_ID]`` relative to the work directory."""
        tail = "" if index is None else f".{index + 1}"
        return f"logs/{name}.o{job_id}{tail}"
