"""The local backend's state files under ``.campaign/local/<id>/``, as readers see them.

``localjobs`` (submit, cancel) and ``localexec`` (the executor) write them (the layout is in
localexec's docstring); this module reads them for ``status``, ``siblings``, dependency waits
and ``cancel``: a job's view, whether its executor is still alive, and the end written on
behalf of one that is gone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from campaignops.runner.local import JOB_ID, STARTED_BY
from campaignops.runner.spec import FINISHED


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None


def alive(pgid: object) -> bool:
    """``kill -0 -- -PGID`` on a group whose only member is its leader (the executor's).

    A zombie leader counts as gone: in a container whose PID 1 reaps nothing, an executor that
    died stays a zombie for ever and ``kill -0`` alone would call it alive.
    """
    if not isinstance(pgid, int) or pgid <= 1:
        return False
    try:
        os.kill(-pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's group by that number: alive, not ours to judge
    try:
        stat = Path(f"/proc/{pgid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True  # no /proc (macOS): kill -0 is all there is
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def lost(state: dict[str, Any], end: str, reason: str) -> dict[str, Any]:
    """The job's end as told by someone other than its (dead) executor."""
    tasks = [
        {**t, "state": end} if t.get("state") not in FINISHED else t for t in state.get("tasks", [])
    ]
    return {**state, "state": end, "reason": reason, "tasks": tasks}


def view(root: Path, job_id: str) -> dict[str, Any]:
    """What ``status`` prints for ``<id>`` or ``<id>_<index>`` (JobState's fields + reason)."""
    base, _, index = job_id.partition("_")
    job = read_json(root / base / "job.json") if JOB_ID.fullmatch(base) else None
    if job is None:
        return {"job_id": job_id, "state": "UNKNOWN"}
    path = root / base / "state.json"
    cancelled = (root / base / "cancel").exists()
    state = read_json(path) or {"state": "CANCELLED" if cancelled else "PENDING", "tasks": []}
    if "executor_pid" not in state:
        state = {**state, "executor_pid": started_by(root / base / STARTED_BY)}
    unfinished = state["state"] not in FINISHED and state["executor_pid"] is not None
    if unfinished and not alive(state["executor_pid"]):
        state = read_json(path) or state  # it may have written its end just before exiting
        if state["state"] not in FINISHED:
            end = "CANCELLED" if cancelled else "NODE_FAIL"
            state = lost(state, end, "cancelled" if cancelled else "executor gone")
    head = {"job_id": job_id, "submitted": job["submitted"], "timelimit": job["timelimit"]}
    head |= {"name": job["name"], "comment": job["comment"]}
    keys = ("state", "exit_code", "started", "ended", "elapsed_s", "reason")
    if not index:
        own = [
            {"index": t["index"]} | {k: t.get(k) for k in keys}
            for t in state["tasks"]
            if isinstance(t, dict) and isinstance(t.get("index"), int)
        ]
        return head | {k: state.get(k) for k in keys} | {"tasks": own}
    # Before the executor's first write, a task is as PENDING (or CANCELLED) as its job.
    tasks = {str(t["index"]): t for t in state["tasks"]} or {
        str(i): {"state": state["state"]} for i in range(job["size"])
    }
    if index not in tasks:
        return {"job_id": job_id, "state": "UNKNOWN"}
    return head | {k: tasks[index].get(k) for k in keys}


def started_by(path: Path) -> int | None:
    """The pid ``submit`` recorded for the executor it started, if it got that far."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def list_jobs(root: Path) -> list[str]:
    found = [p.name for p in root.iterdir() if JOB_ID.fullmatch(p.name)] if root.is_dir() else []
    return sorted(found, key=job_number)


def job_number(job_id: str) -> int:
    """The counter in a local job id (its order among this clone's jobs)."""
    match = JOB_ID.fullmatch(job_id)
    return int(match[1]) if match else 0
