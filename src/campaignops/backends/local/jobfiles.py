"""The local backend's job files as ``submit`` and ``cancel`` write them.

``submit`` allocates an id under ``flock`` (``.next-id``), copies the script, writes
``job.json`` and starts the detached executor (campaignops.backends.local.executor, which runs the
tasks and writes ``state.json``). ``cancel`` asks for a whole job (``<id>/cancel`` and TERM to
the executor's group) or one array task (``<id>_<index>``: a line appended to
``<id>/cancel-tasks``, read by the executor every tick); with no executor left, it writes the
end itself. The file layout is in campaignops.backends.local.executor's docstring; the readers are in
campaignops.backends.local.state.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from campaignops.backends import jobids
from campaignops.backends.local.machine import (
    EXECUTOR,
    JOB_ID,
    STARTED_BY,
    LocalBackendError,
    parse_directives,
)
from campaignops.backends.local.state import (
    alive,
    job_number,
    list_jobs,
    lost,
    read_job,
    read_state,
    skipped,
    started_by,
)
from campaignops.core.atomic import write_atomic
from campaignops.model.states import FINISHED
from campaignops.remote.supervision import killpg, request_cancel

Json = dict[str, Any]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: Json) -> None:
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


# --- submit ------------------------------------------------------------------------------------


def submit(root: Path, script: Path) -> str:
    text = script.read_text(encoding="utf-8")
    directives = parse_directives(text)
    unknown = [p for p in directives.after if isinstance(read_job(root / p), str)]
    if unknown:
        raise LocalBackendError(
            message=f"job dependency problem: no local job {', '.join(unknown)}",
            hint=f"afterok takes ids of jobs under {root}",
        )
    job_id = jobids.allocate(
        root, prefix="local-", used=lambda: map(job_number, list_jobs(root)), make_dir=True
    )
    job_dir = root / job_id
    write_atomic(job_dir / "script.sh", text.encode("utf-8"))
    job: Json = {"job_id": job_id, "name": directives.name, "comment": directives.comment}
    job |= {"timelimit": directives.time, "submitted": now(), "size": directives.size}
    write_json(job_dir / "job.json", job)
    with (job_dir / "executor.log").open("ab") as log:
        # A new session: no terminal to hang up, a group of its own, and nothing tying it to us.
        executor = subprocess.Popen(
            [sys.executable, "-m", EXECUTOR, "run", "--state", str(root), job_id],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    # Its pid (= its group) before it writes anything: an executor that dies before its first
    # state write is then seen as gone, instead of a job PENDING for ever.
    write_atomic(job_dir / STARTED_BY, f"{executor.pid}\n".encode("ascii"))
    return job_id


# --- cancel ------------------------------------------------------------------------------------


def _state(root: Path, job_id: str) -> dict[str, Any] | None:
    """The job's state.json for a cancel; a broken one is refused, not overwritten."""
    state = read_state(root / job_id)
    if isinstance(state, str):
        raise LocalBackendError(
            message=skipped(root, job_id, state).replace("skipped", "cannot cancel", 1),
            hint="its executor is gone or its files were damaged: remove the directory",
        )
    return state


def cancel_task(root: Path, job_id: str, index: int) -> None:
    """Cancel one array task: the executor stops it (or never starts it); with no executor
    left, the task's end is written here."""
    job_dir = root / job_id
    job = read_job(job_dir)
    size = job["size"] if isinstance(job, dict) else 1
    if index >= size:
        raise LocalBackendError(message=f"local job {job_id} has no task {index} (0-{size - 1})")
    request_cancel(job_dir, [str(index)])
    state = _state(root, job_id)
    if state is None or state["state"] in FINISHED:
        return
    pid = state.get("executor_pid")
    if pid is not None and alive(pid):
        return  # it reads the request within a tick
    tasks = state["tasks"]
    for task in tasks:
        if task["index"] == index and task["state"] not in FINISHED:
            killpg(task.get("pgid"), signal.SIGKILL)
            task.update(state="CANCELLED", ended=now())
    write_json(job_dir / "state.json", {**state, "tasks": tasks})


def cancel(root: Path, job_id: str) -> None:
    """Cancel a job (``<id>``) or one of its array tasks (``<id>_<index>``)."""
    base, _, index = job_id.partition("_")
    job_dir = root / base
    if not JOB_ID.fullmatch(base) or isinstance(read_job(job_dir), str):
        raise LocalBackendError(message=f"no local job {base} under {root}")
    if index:
        if not index.isdigit():
            raise LocalBackendError(message=f"{job_id!r} is not <job id>_<task index>")
        cancel_task(root, base, int(index))
        return
    request_cancel(job_dir)
    state = _state(root, base)
    if state is not None and state["state"] in FINISHED:
        return
    pid = state.get("executor_pid") if state else started_by(job_dir / STARTED_BY)
    if pid is None or alive(pid):
        if state is not None:
            killpg(pid, signal.SIGTERM)
        return  # or an executor still starting: it reads the request itself
    # No executor left to do it (one that died before its first write has no tasks either).
    state = state or {"state": "PENDING", "tasks": []}
    for task in state["tasks"]:
        if task["state"] not in FINISHED:
            killpg(task.get("pgid"), signal.SIGKILL)
    write_json(job_dir / "state.json", lost(state, "CANCELLED", "cancelled") | {"ended": now()})
