"""The local backend's job files as ``submit`` and ``cancel`` write them.

``submit`` allocates an id under ``flock`` (``.next-id``), copies the script, writes
``job.json`` (the local keys readers use, and the box executor's keys read from the script's
``#LOCAL`` lines: ``job_document``) and starts the detached executor: the one supervisor,
campaignops.remote's ``Executor`` (``python3 …/remote/boxexec.py run <id dir>``), which runs the
tasks and writes ``state.json`` in its format, as for box and local GPU jobs. ``cancel`` asks for a whole job (``<id>/cancel`` and TERM to
the executor's group) or one array task (``<id>_<index>``: a line appended to
``<id>/cancel-tasks``, read by the executor every tick); with no executor left, it writes the
end itself. The file layout is in campaignops.backends.local.executor's docstring; the readers are in
campaignops.backends.local.state. A job submitted before one loop (a ``job.json`` without
``indices``) keeps the local executor's state file, which cancel still writes as it did.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from campaignops.backends import jobids
from campaignops.backends.local.directives import (
    JOB_ID,
    STARTED_BY,
    Directives,
    LocalBackendError,
    parse_directives,
)
from campaignops.backends.local.state import (
    executor_of,
    job_number,
    list_jobs,
    lost,
    read_job,
    read_state,
    skipped,
)
from campaignops.core.atomic import write_atomic
from campaignops.model.states import FINISHED
from campaignops.remote import boxexec, commands, jobstate
from campaignops.remote.executor import Executor
from campaignops.remote.jobstate import fold
from campaignops.remote.records import alive as supervised_alive
from campaignops.remote.supervision import killpg, request_cancel

Json = dict[str, Any]
SUPERVISOR = Path(boxexec.__file__).resolve()  # the box executor's entry, run by its path here
TICK_S = 0.1  # how often a local job's executor looks at its tasks (the local executor's tick)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: Json) -> None:
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


# --- submit ------------------------------------------------------------------------------------


def job_document(d: Directives, job_id: str) -> Json:
    """The box executor's job.json keys for a local CPU job, from its ``#LOCAL`` lines: every
    task here, no GPUs, the array's cap, the limit, warning, grace and memory cap, afterok on
    local jobs beside it, logs where the local backend's log_path says."""
    stem = f"{d.name}-{job_id}" + ("_{index}" if d.size > 1 else "")
    warning = {"signal": d.warning[0], "seconds": d.warning[1]} if d.warning else None
    return {
        "job_id": job_id, "indices": list(range(d.size)), "gpus": None, "max_parallel": d.cap,
        "time_limit_s": d.time_s, "kill_wait_s": d.kill_wait_s, "warning": warning,
        "after": list(d.after), "mem_bytes": d.mem_bytes, "workdir": d.workdir,
        "log_dir": d.log_dir, "log_name": stem + ".out", "local": True, "tick_s": TICK_S,
    }  # fmt: skip


def run(root: Path, job_id: str) -> Json:
    """Run a job's executor in this process: ``run`` of a job submitted before one loop (its
    job.json gets the box executor's keys first), or started by an older ``submit``."""
    job_dir = root / job_id
    job = read_job(job_dir)
    if isinstance(job, str):
        raise LocalBackendError(message=skipped(root, job_id, job))
    if "indices" not in job:
        directives = parse_directives((job_dir / "script.sh").read_text(encoding="utf-8"))
        write_json(job_dir / "job.json", job | job_document(directives, job_id))
    return commands.cmd_run(job_dir, None)


def _start(job_dir: Path, lock_fd: int | None) -> int:
    """Start the job's executor detached; the pid. ``lock_fd`` (the executor lock, held) is
    passed on, so the lock is never free while the job has an executor to come."""
    handed = ["--lock-fd", str(lock_fd)] if lock_fd is not None else []
    with (job_dir / "executor.log").open("ab") as log:
        # A new session: no terminal to hang up, a group of its own, and nothing tying it to us.
        executor = subprocess.Popen(
            [sys.executable, str(SUPERVISOR), "run", str(job_dir), *handed],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            pass_fds=() if lock_fd is None else (lock_fd,),
        )
    return executor.pid


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
    # The executor lock, taken before job.json exists and handed to the executor: a job whose
    # lock is free and that has no state.json has no executor and never will (a submit killed
    # before it started one, an executor that died at start-up), so readers end it.
    lock_fd = jobstate.lock(job_dir)
    try:
        write_atomic(job_dir / "script.sh", text.encode("utf-8"))
        job: Json = {"job_id": job_id, "name": directives.name, "comment": directives.comment}
        job |= {"timelimit": directives.time, "submitted": now(), "size": directives.size}
        write_json(job_dir / "job.json", job | job_document(directives, job_id))
        pid = _start(job_dir, lock_fd)
    finally:
        if lock_fd is not None:
            os.close(lock_fd)  # the executor holds its own copy of the descriptor
    # Its pid (= its group), for cancel's TERM before the executor's first state write.
    write_atomic(job_dir / STARTED_BY, f"{pid}\n".encode("ascii"))
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


def _end_here(job_dir: Path, keys: set[str] | None) -> None:
    """With no executor left: kill the tasks' groups (``keys``, else every task) and write their
    end into the one supervisor's state file, as its cancel would."""
    executor = Executor(job_dir)
    for key, task in executor.tasks.items():
        if (keys is None or key in keys) and task["state"] not in FINISHED:
            if supervised_alive(task):
                killpg(task["pid"], signal.SIGKILL)
            task.update(state="CANCELLED", end=now(), pid=None, ticks=None, reason="cancelled")
    executor.state["state"] = fold([executor.tasks[k] for k in executor.order])
    executor.state["cancelled"] = executor.state.get("cancelled") or keys is None
    if executor.state["state"] in FINISHED:
        executor.state["ended"] = now()
    executor.save()


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
    if executor_of(job_dir, state)[1]:
        return  # it reads the request within a tick
    if isinstance(job, dict) and "indices" in job:
        _end_here(job_dir, {str(index)})
        return
    tasks = state["tasks"]  # the local executor's file, from before one loop
    for task in tasks:
        if task["index"] == index and task["state"] not in FINISHED:
            killpg(task.get("pgid"), signal.SIGKILL)
            task.update(state="CANCELLED", ended=now())
    write_json(job_dir / "state.json", {**state, "tasks": tasks})


def cancel(root: Path, job_id: str) -> None:
    """Cancel a job (``<id>``) or one of its array tasks (``<id>_<index>``)."""
    base, _, index = job_id.partition("_")
    job_dir = root / base
    job = read_job(job_dir) if JOB_ID.fullmatch(base) else "no such job"
    if isinstance(job, str):
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
    pid, live = executor_of(job_dir, state)
    if live is not False:
        if state is not None:
            killpg(pid, signal.SIGTERM)
        return  # or an executor still starting: it reads the request itself
    # No executor left to do it (one that died before its first write has no tasks either).
    if "indices" in job:
        _end_here(job_dir, None)
        return
    state = state or {"state": "PENDING", "tasks": []}
    for task in state["tasks"]:
        if task["state"] not in FINISHED:
            killpg(task.get("pgid"), signal.SIGKILL)
    write_json(job_dir / "state.json", lost(state, "CANCELLED", "cancelled") | {"ended": now()})
