"""The local backend's state files under ``.campaign/local/<id>/``, as readers see them.

``localjobs`` (submit, cancel) and the one supervisor (campaignops.remote's ``Executor``) write
them (the layout is in campaignops.backends.local.executor's docstring); this module reads them
for ``status``, ``siblings`` and ``cancel``: a job's view, whether its executor is still alive,
and the end written on behalf of one that is gone. ``state.json`` is the box executor's (tasks
keyed by index); a job run by the local executor before one loop has that executor's file
(a list of tasks, ``executor_pid``), still read: ``read_state`` shows both alike.

A job directory can be broken: a ``submit`` killed between ``mkdir`` and its ``job.json``, a full
disk, a hand edit. Such an entry is skipped (listed with the reason by ``siblings``, UNKNOWN with
the reason to ``status``) and never stops the readers: one stray ``local-7/`` once made every
later submit, dry run and refresh fail with a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from campaignops.backends.local.directives import JOB_ID, STARTED_BY, fold
from campaignops.model.states import FINISHED, STATES
from campaignops.remote import records
from campaignops.remote.jobstate import damaged, held

# job.json as localjobs.submit writes it: the keys readers use, with their types.
_JOB_KEYS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "comment": (str,),
    "submitted": (str,),
    "timelimit": (str, type(None)),
    "size": (int,),
}
_KIND = {str: "a string", int: "an integer"}


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when it is absent or not one (unreadable, not
    UTF-8, not JSON, not an object): callers treat all of those as missing."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # ValueError: UnicodeDecodeError, bad JSON
        return None
    return data if isinstance(data, dict) else None


def _problem(path: Path) -> str:
    """Why read_json(path) gave None (only called on that failure path)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"no {path.name}"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path.name} cannot be read ({exc.__class__.__name__})"
    try:
        json.loads(text)
    except ValueError:
        return f"{path.name} is not JSON"
    except RecursionError:
        return f"{path.name} nests too deeply"
    return f"{path.name} is not a JSON object"


def read_job(job_dir: Path) -> dict[str, Any] | str:
    """``job_dir``'s job.json with every key readers use, of its type; else why not (a str)."""
    job = read_json(job_dir / "job.json")
    if job is None:
        return _problem(job_dir / "job.json")
    for key, kinds in _JOB_KEYS.items():
        if key not in job:
            return f"job.json has no {key!r}"
        value = job[key]
        if not isinstance(value, kinds) or isinstance(value, bool):
            return f"job.json: {key!r} is {value!r}, not {_KIND[kinds[0]]}"
    if job["size"] < 1:
        return f"job.json: 'size' is {job['size']}, not a task count"
    return job


def read_state(job_dir: Path) -> dict[str, Any] | str | None:
    """``job_dir``'s state.json (None before the executor's first write); else why not (a str).

    The executor writes it atomically, so a broken one was broken by someone else: its job's
    state is unknown rather than guessed."""
    path = job_dir / "state.json"
    if not path.exists():
        return None
    state = read_json(path)
    if state is None:
        return _problem(path)
    if state.get("state") not in STATES:
        return f"state.json: 'state' is {state.get('state')!r}, not a job state"
    if isinstance(state.get("tasks"), dict):  # the one supervisor's
        why = damaged(state)
        return f"state.json: {why}" if why else shown(state)
    tasks = state.get("tasks", [])
    if not isinstance(tasks, list) or not all(
        isinstance(t, dict)
        and isinstance(t.get("index"), int)
        and not isinstance(t.get("index"), bool)
        and t.get("state") in STATES
        for t in tasks
    ):
        return "state.json: 'tasks' is not a list of tasks with an index and a state"
    pid = state.get("executor_pid")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool)):
        return f"state.json: 'executor_pid' is {pid!r}, not a process id"
    return {**state, "tasks": tasks}


def shown(state: dict[str, Any]) -> dict[str, Any]:
    """The box executor's state.json as the readers take a local job's: tasks as a list with
    the local names (started, ended, pgid), the job's start (its first task's), end, elapsed
    time, exit code and reason once it has finished: DependencyNeverSatisfied, else cancelled
    when the executor saw the whole job's cancel (``cancelled``; not a cancel after the end)."""
    tasks = [
        {"index": int(key), "state": t["state"], "exit_code": t.get("exit_code"),
         "started": t.get("start"), "ended": t.get("end"), "elapsed_s": t.get("elapsed_s"),
         "pgid": t.get("pgid")}
        for key, t in sorted(state["tasks"].items(), key=lambda item: int(item[0]))
    ]  # fmt: skip
    head = {"job_id": state.get("job_id"), "state": state["state"], "reason": None}
    starts = [t["started"] for t in tasks if t["started"]]
    head |= {"executor": state.get("executor"), "started": min(starts) if starts else None}
    head |= {"ended": None, "exit_code": None, "elapsed_s": None}
    if state["state"] in FINISHED:
        never = any(t.get("reason") == "DependencyNeverSatisfied" for t in state["tasks"].values())
        cancelled = state.get("cancelled") is True
        reason = "DependencyNeverSatisfied" if never else "cancelled" if cancelled else None
        code = fold([(t["state"], t["exit_code"]) for t in tasks])[1] if tasks else None
        head |= {"ended": state.get("ended"), "exit_code": code, "reason": reason}
        head |= {"elapsed_s": state.get("elapsed_s")}
    return head | {"tasks": tasks}


def executor_of(job_dir: Path, state: dict[str, Any] | None) -> tuple[int | None, bool | None]:
    """The pid of the job's executor (None while none is known) and whether it is alive (None:
    not known yet). The one its state file names (the box executor's record, or the local
    executor's ``executor_pid``); before the first state write, the executor lock says (held
    by ``submit`` from before job.json until the executor it started ends), else, for a job
    submitted before handed locks, the pid ``submit`` recorded in ``executor.pid``."""
    if state is not None and isinstance(state.get("executor"), dict):
        pid = state["executor"].get("pid")
        return (pid if isinstance(pid, int) else None), records.alive(state["executor"])
    known = state is not None and "executor_pid" in state
    pid = state.get("executor_pid") if state and known else started_by(job_dir / STARTED_BY)
    holding = held(job_dir) if state is None else None
    if holding is not None:
        return pid, holding
    return pid, (alive(pid) if pid is not None else None)


def skipped(root: Path, base: str, why: str) -> str:
    """How a broken job directory is reported: its place as the user sees it, and why."""
    return f"skipped {root.parent.name}/{root.name}/{base}: {why}"


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
    """What ``status`` prints for ``<id>`` or ``<id>_<index>`` (JobState's fields + reason);
    UNKNOWN, with the reason, for a job this clone does not have or whose files are broken."""
    base, _, index = job_id.partition("_")
    if not JOB_ID.fullmatch(base) or not (root / base).is_dir():
        return {"job_id": job_id, "state": "UNKNOWN"}
    job = read_job(root / base)
    if isinstance(job, str):
        return {"job_id": job_id, "state": "UNKNOWN", "reason": skipped(root, base, job)}
    cancelled = (root / base / "cancel").exists()
    state = read_state(root / base)
    if isinstance(state, str):
        return {"job_id": job_id, "state": "UNKNOWN", "reason": skipped(root, base, state)}
    live = executor_of(root / base, state)[1]
    state = state or {"state": "CANCELLED" if cancelled else "PENDING", "tasks": []}
    if state["state"] not in FINISHED and live is False:
        again = read_state(root / base)  # it may have written its end just before exiting
        state = again if isinstance(again, dict) else state
        if state["state"] not in FINISHED:
            end = "CANCELLED" if cancelled else "NODE_FAIL"
            state = lost(state, end, "cancelled" if cancelled else "executor gone")
    head = {"job_id": job_id, "submitted": job["submitted"], "timelimit": job["timelimit"]}
    head |= {"name": job["name"], "comment": job["comment"]}
    keys = ("state", "exit_code", "started", "ended", "elapsed_s", "reason")
    if not index:
        own = [{"index": t["index"]} | {k: t.get(k) for k in keys} for t in state["tasks"]]
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


def jobs(root: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every job of this clone as ``view`` shows it, and the broken entries skipped (why)."""
    shown: list[dict[str, Any]] = []
    broken: list[str] = []
    for job_id in list_jobs(root):
        found = view(root, job_id)
        if "name" in found:
            shown.append(found)
        else:
            broken.append(found.get("reason") or skipped(root, job_id, "not a directory"))
    return shown, broken


def list_jobs(root: Path) -> list[str]:
    found = [p.name for p in root.iterdir() if JOB_ID.fullmatch(p.name)] if root.is_dir() else []
    return sorted(found, key=job_number)


def job_number(job_id: str) -> int:
    """The counter in a local job id (its order among this clone's jobs)."""
    match = JOB_ID.fullmatch(job_id)
    return int(match[1]) if match else 0
