"""The ssh backend: GPU boxes (rented instances, workstations) where SSH is the only control
channel, for backend pages of ``kind: ssh`` (generic-ssh, vast-ai, runpod, lambda).

The runner's Backend protocol is argv in, text out, like every backend; the argvs are those of
two helper processes on this machine, which make the ssh calls (campaignops.backends.ssh.link):

- ``python -m campaignops.backends.ssh.submit submit …`` deploys the campaign at the submitted
  commit on each instance (``git archive | ssh tar``, once per commit), places the executor
  (campaignops/remote/ as one zip, named by its content) and the instance's job directory, and
  ``start``\\ s it detached (tmux, else ``setsid -f``). The array's indices are dealt round-robin
  across the page's instances. It prints the job id (``ssh-<n>-<6 hex>``) and the placement
  (instance, commit, remote directory, executor pid per instance), which the ledger records.
- ``python -m campaignops.backends.ssh.query status|siblings|cancel …`` makes ONE ssh call per
  instance (the executor's ``status`` answers a whole box), folds the instances' tasks into each
  job, and marks the tasks of an unreachable instance UNKNOWN, never FAILED. An unfinished job
  whose executor is gone is started again there (``start`` resumes from its state file; finished
  tasks never run twice): one more ssh call, only then.

The rendered script is the local backend's (``#LOCAL`` directives, the shared task block), with
the work directory a placeholder that sshsubmit replaces by each instance's deploy directory.
Task logs are written on the box under the deploy directory; a refresh brings each ended
task's tail to ``log_path`` (relative to the campaign root) and ``campaign pull`` the whole log
(campaignops.backends.ssh.boxlogs): diagnose reads them there, as for every backend.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends import command as scheduler
from campaignops.backends.local import directives as localjob
from campaignops.backends.local import machine as local
from campaignops.backends.ssh.answers import index_of
from campaignops.backends.ssh.instances import of_page
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import JobSpec, JobState, live
from campaignops.model.ledger import parse_time
from campaignops.model.states import FINISHED, STATES

NAME = "ssh"
SUBMIT = "campaignops.backends.ssh.submit"
QUERY = "campaignops.backends.ssh.query"
# The script's work directory until sshsubmit writes each instance's copy (shlex leaves it bare).
DEPLOY_MARK = "@CAMPAIGN_DEPLOY_DIR@"
AFTER = "#SSHBOX --after="
BOX = "#SSHBOX --box="  # the manifest's box keys as one JSON object (spec.BoxSettings)
STATE_DIR = ".campaign/ssh"  # this checkout's ids and placements, per backend; gitignored
JOB_ID = re.compile(r"ssh-([0-9]+)-[0-9a-f]{6}")
# ssh's own failures are retried inside the helpers (exit 255, bounded), never here: a retried
# submit whose first try started some instances would start them again under a new id.
TRANSIENT = scheduler.NEVER
UNSENT = scheduler.NEVER
PARTIAL_ANSWER: frozenset[int] = frozenset()


class SshBackendError(CampaignError):
    """A job the ssh backend cannot render, or an answer of its helpers it cannot read."""

    exit_code = 2


def render(spec: JobSpec) -> str:
    """The local backend's script with the deploy directory left to sshsubmit; afterok parents
    (ssh job ids) ride in an ``#SSHBOX`` line the local parser skips."""
    text = local.render(dataclasses.replace(spec, workdir=DEPLOY_MARK, after=()))
    head, _, rest = text.partition("\n")
    lines = rest.split("\n")
    assert lines[0].startswith("# Local job") and lines[1].startswith("# sbatch")
    lines[0:2] = [
        "# SSH box job: campaignops.backends.ssh.submit reads the #LOCAL lines (sbatch's keys) into",
        "# job.json for the box's executor. Rendered from a committed manifest: change that.",
    ]
    if spec.after:
        lines.insert(2, AFTER + ",".join(spec.after))
    settings = spec.box.record()
    if settings:
        lines.insert(2, BOX + json.dumps(settings, sort_keys=True, separators=(",", ":")))
    return "\n".join([head, *lines])


def box_of(script: str) -> dict[str, Any]:
    """The ``#SSHBOX --box`` settings of a rendered script ({} when it has none)."""
    for line in script.splitlines():
        if line.startswith(BOX):
            try:
                found = json.loads(line[len(BOX) :])
            except json.JSONDecodeError:
                return {}
            return found if isinstance(found, dict) else {}
        if not line.startswith("#"):
            break
    return {}


def after_of(script: str) -> tuple[str, ...]:
    for line in script.splitlines():
        if line.startswith(AFTER):
            return tuple(p for p in line[len(AFTER) :].split(",") if p)
        if not line.startswith("#"):
            break
    return ()


def parse_job_id(stdout: str) -> str:
    try:
        job_id = json.loads(stdout)["job_id"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise SshBackendError(message=f"ssh submit printed {stdout[:200]!r}, not a job") from None
    if not isinstance(job_id, str) or not JOB_ID.fullmatch(job_id):
        raise SshBackendError(message=f"ssh submit printed job id {job_id!r}")
    return job_id


def placement(stdout: str) -> list[dict[str, Any]] | None:
    """The placement sshsubmit printed with the job id (what the ledger records)."""
    try:
        found = json.loads(stdout).get("placement")
    except (ValueError, AttributeError, RecursionError):
        return None
    return found if isinstance(found, list) else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tries(job_id: str, index: int, raw: object) -> tuple[JobState, ...]:
    """The attempts the executor ran again after a GPU out-of-memory (boxexec ``tries``), each
    ended FAILED with its exit code and the executor's reason (``oom: attempt 1 of 3;
    retried``), which campaignops.backends.ssh.kind reads as the category oom-gpu."""
    found = []
    for one in raw if isinstance(raw, list) else ():
        if isinstance(one, Mapping) and _whole(one.get("attempt")):
            ended = _task(job_id, index, {**one, "state": "FAILED", "tries": None})
            found.append(dataclasses.replace(ended, attempt=_whole(one["attempt"])))
    return tuple(found)


def _task(job_id: str, index: int, raw: Mapping[str, Any]) -> JobState:
    state = raw.get("state")
    code = raw.get("exit_code")
    started = raw.get("start") if isinstance(raw.get("start"), str) else None
    ended = raw.get("end") if isinstance(raw.get("end"), str) else None
    known = state if state in STATES else "UNKNOWN"
    tries = _tries(job_id, index, raw.get("tries"))
    return JobState(
        job_id=job_id,
        task=index,
        state=known,
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        started=started,
        ended=ended,
        # The executor keeps no elapsed time: a finished task's run is its end less its start
        # (its last attempt's, for one the executor retried), so audit resources can use it.
        elapsed_s=_elapsed(started, ended) if known in FINISHED else None,
        reason=raw.get("reason") if isinstance(raw.get("reason"), str) else None,
        attempt=_whole(raw.get("attempts")) if tries else None,
        tries=tries,
    )


def _elapsed(started: str | None, ended: str | None) -> float | None:
    begin, end = parse_time(started), parse_time(ended)
    if begin is None or end is None or end < begin:
        return None
    return (end - begin).total_seconds()


def fold(tasks: Mapping[int, JobState]) -> tuple[str, int | None]:
    """A job's state from its tasks on every instance: the worst once all ended; RUNNING while
    some run or ended; UNKNOWN when no instance answered for any of them; else PENDING."""
    states = [t.state for t in tasks.values()]
    if not states or all(s == "UNKNOWN" for s in states):
        return "UNKNOWN", None
    if all(s in FINISHED for s in states):
        return localjob.fold([(t.state, t.exit_code) for t in tasks.values()])
    if all(s == "PENDING" for s in states):
        return "PENDING", None
    return "RUNNING", None


def _job(record: Mapping[str, Any]) -> JobState:
    job_id = record.get("job_id")
    if not isinstance(job_id, str):
        raise SshBackendError(message=f"ssh status record {dict(record)!r} has no job id")
    raw_tasks = record.get("tasks")
    tasks = {
        index: _task(job_id, index, t)
        for i, t in (raw_tasks.items() if isinstance(raw_tasks, Mapping) else ())
        if (index := index_of(i)) is not None and isinstance(t, Mapping)
    }
    state, code = fold(tasks)
    started = sorted(t.started for t in tasks.values() if t.started)
    ended = sorted(t.ended for t in tasks.values() if t.ended)
    text: dict[str, str | None] = {
        k: value if isinstance(value := record.get(k), str) else None
        for k in ("name", "comment", "submitted")
    }
    return JobState(
        job_id=job_id,
        state=state,
        exit_code=code,
        started=started[0] if started else None,
        ended=ended[-1] if ended and state in FINISHED else None,
        # As Slurm's fold: the longest task's run (a job of one task: its own).
        elapsed_s=max(
            (t.elapsed_s for t in tasks.values() if t.elapsed_s is not None), default=None
        )
        if state in FINISHED
        else None,
        tasks=MappingProxyType(tasks),
        name=text["name"],
        comment=text["comment"],
        submitted=text["submitted"],
    )


def parse_states(outputs: Sequence[str]) -> dict[str, JobState]:
    out: dict[str, JobState] = {}
    for stdout in outputs:
        try:
            jobs = json.loads(stdout)["jobs"]
        except (ValueError, KeyError, TypeError, RecursionError):
            raise SshBackendError(message=f"ssh status printed {stdout[:200]!r}") from None
        for record in jobs if isinstance(jobs, list) else ():
            if isinstance(record, Mapping):
                job = _job(record)
                out[job.job_id] = job
    return out


def assume_running(jobs: Iterable[JobState]) -> list[JobState]:
    """For the no_sibling gate: a task whose box did not answer may well be running, so it
    holds its target (a second submission of it while the box is unreachable could run it
    twice); an unfinished job with no answer at all likewise."""

    def held(state: JobState) -> JobState:
        return dataclasses.replace(state, state="RUNNING") if state.state == "UNKNOWN" else state

    return [
        dataclasses.replace(
            held(job), tasks=MappingProxyType({i: held(t) for i, t in job.tasks.items()})
        )
        for job in jobs
    ]


class SshBackend:
    """The ssh backend for one campaign checkout and one page (its instances are read by the
    helpers from ``backends/<name>.md``). Checked against runner.backend_base.Backend by mypy."""

    NAME = NAME
    TRANSIENT = TRANSIENT
    UNSENT = UNSENT
    PARTIAL_ANSWER = PARTIAL_ANSWER

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name

    def _helper(self, module: str, command: str, *args: str) -> list[str]:
        where = ["--root", str(self.root), "--backend", self.name]
        return [sys.executable, "-m", module, command, *where, *args]

    def render(self, spec: JobSpec) -> str:
        # The page's instances are read here, in the preflight: a page that cannot be run
        # (no instances, RunPod's basic proxy) is refused before anything is recorded.
        of_page(self.root, self.name, backend_base.page(self.root, self.name))
        return render(spec)

    def submit_argv(self, script_path: str) -> list[str]:
        return self._helper(SUBMIT, "submit", script_path)

    def parse_job_id(self, stdout: str) -> str:
        return parse_job_id(stdout)

    def placement(self, stdout: str) -> list[dict[str, Any]] | None:
        return placement(stdout)

    def query_argvs(self, job_ids: Sequence[str]) -> list[list[str]]:
        return [self._helper(QUERY, "status", *job_ids)]

    def parse_states(self, outputs: Sequence[str]) -> dict[str, JobState]:
        return parse_states(outputs)

    def sibling_argv(self, names: Sequence[str]) -> list[str]:
        return self._helper(QUERY, "siblings", *names)

    def parse_live(self, stdout: str) -> tuple[JobState, ...]:
        return live(assume_running(parse_states([stdout]).values()))

    def lookup(self, names: Sequence[str], call: scheduler.Runs) -> dict[str, JobState]:
        found = parse_states([call(self._helper(QUERY, "siblings", "--all", *names)).stdout])
        return {k: v for k, v in found.items() if v.name in names}

    def cancel_argv(self, job_ids: Sequence[str]) -> list[str]:
        return self._helper(QUERY, "cancel", *job_ids)

    def task_id(self, job_id: str, index: int) -> str:
        return local.task_id(job_id, index)

    def log_path(self, job_id: str, *, name: str, index: int | None) -> str:
        return local.log_path(job_id, name=name, index=index)


def state_dir(root: Path, backend: str) -> Path:
    """This checkout's ids and placement records for one ssh backend (gitignored)."""
    return root / STATE_DIR / backend_base.checked_name(backend)
