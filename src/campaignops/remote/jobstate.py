"""A job directory on a box: ``job.json`` as the runner wrote it (checked before anything runs),
``state.json`` as the executor writes it (its states, and what in it this executor did not
write), afterok's parents and the runner's verdicts, and the executor lock.

Standard library only, Python 3.8+; the states are a checked copy of campaignops.model.states
(tests/remote/test_boxexec_detach.py keeps them in step).
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from campaignops.remote.records import BoxError, alive, proc_ticks, read_json

FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED")
# A finished job is as bad as its worst task (campaignops.model.states.WORST_FIRST).
WORST_FIRST = ("NODE_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "FAILED")
PUBLIC = ("state", "exit_code", "start", "end", "attempts", "gpu", "reason")


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


# What job.json's keys must hold (None is allowed for each but indices); checked before start.
SHAPES: dict[str, Callable[[Any], bool]] = {
    "indices": lambda v: _ints(v) and all(0 <= i < 10**9 for i in v),  # a status key each
    "gpus": _ints,
    "after": lambda v: isinstance(v, list) and all(parent_of(j) is not None for j in v),
    "max_parallel": lambda v: isinstance(v, int) and v > 0,
    "time_limit_s": _number,
    "kill_wait_s": _number,
    "gpu_free_threshold_mib": _number,
    "warning": lambda v: isinstance(v, dict) and _number(v.get("seconds"))
    and hasattr(signal, "SIG" + str(v.get("signal"))),
    "oom_retry": lambda v: isinstance(v, dict) and isinstance(v.get("max_attempts"), int)
    and _number(v.get("delay_s", 0)) and isinstance(v.get("patterns"), list),
    "conda": lambda v: isinstance(v, dict) and isinstance(v.get("env"), str)
    and (v.get("hook") is None or isinstance(v.get("hook"), str)),
    "outputs": lambda v: isinstance(v, dict) and all(isinstance(p, list) for p in v.values()),
    "mem_bytes": lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0,
    "tick_s": lambda v: _number(v) and v > 0,
    "local": lambda v: isinstance(v, bool),
}  # fmt: skip


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a job id that is one path component


def parent_of(entry: Any) -> dict[str, Any] | None:
    """One ``after`` entry as ``{"job", "here", "elsewhere"}``: a bare id (the older form) is a
    parent whose whole share is on this box; None for an entry that is neither."""
    if isinstance(entry, str):
        entry = {"job": entry, "here": True, "elsewhere": False}
    if not isinstance(entry, dict) or not isinstance(entry.get("job"), str):
        return None
    here, elsewhere = entry.get("here", True), entry.get("elsewhere", False)
    if not NAME.fullmatch(entry["job"]) or not isinstance(here, bool):
        return None
    if not isinstance(elsewhere, bool) or not (here or elsewhere):
        return None
    return {"job": entry["job"], "here": here, "elsewhere": elsewhere}


def verdicts_dir(jobs_root: Path) -> Path:
    """Where the runner writes what it saw of a parent on every box: ``<state>/verdicts``, not
    the parent's job directory, which a box without a share of the parent does not have."""
    return jobs_root.parent / "verdicts"


def verdict_of(jobs_root: Path, job_id: str) -> str | None:
    record = read_json(verdicts_dir(jobs_root) / (job_id + ".json"))
    state = record.get("state") if isinstance(record, dict) else None
    return state if state in FINISHED else None


def parent_state(path: Path, *, lost_is_final: bool) -> str:
    """A parent's state from its job directory on this machine: UNKNOWN without one, PENDING
    before its executor's first write. With ``lost_is_final`` (a local CPU job: nothing restarts
    a lost executor), an unfinished parent whose executor is gone has ended NODE_FAIL, as the
    local backend's status reads it; on a box the runner starts that executor again."""
    if not path.is_dir():
        return "UNKNOWN"
    record = read_json(path / "state.json")
    found = record.get("state") if isinstance(record, dict) else "PENDING"
    if lost_is_final and found not in FINISHED and executor_gone(path, record):
        return "NODE_FAIL"
    return str(found)


def executor_gone(jobdir: Path, record: Any) -> bool:
    """Whether the executor of a local job is known to be gone: the one its state file names
    (``executor``; ``executor_pid`` in the local executor's files from before one loop), else the
    one ``submit`` started (``executor.pid``); False while none is known yet."""
    record = record if isinstance(record, dict) else {}
    if isinstance(record.get("executor"), dict):
        return not alive(record["executor"])
    pid = record.get("executor_pid")
    if pid is None:
        text = read_text(jobdir / "executor.pid")
        pid = int(text) if text.isdigit() else None
    return isinstance(pid, int) and proc_ticks(pid) is None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return ""


def load_job(jobdir: Path) -> dict[str, Any]:
    job = read_json(jobdir / "job.json")
    hint = "the ssh backend writes job.json before start (docs/formats.md); submit again"
    if not isinstance(job, dict) or not (jobdir / "script.sh").is_file():
        raise BoxError(message=f"{jobdir}: no readable job.json and script.sh", hint=hint)
    for key, shape in SHAPES.items():
        value = job.get(key)
        if (value is not None or key == "indices") and not shape(value):
            raise BoxError(message=f"{jobdir}/job.json: {key} is {value!r}", hint=hint)
    for pattern in (job.get("oom_retry") or {}).get("patterns", ()):
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise BoxError(message=f"{jobdir}/job.json: oom_retry pattern {pattern!r}: {exc}",
                           hint=hint) from None  # fmt: skip
    job.setdefault("job_id", jobdir.name)
    return job


# The types of a task's public fields in state.json (None allowed but for state).
PUBLIC_TYPES = {"state": str, "exit_code": int, "start": str, "end": str, "attempts": int,
                "gpu": int, "reason": str}  # fmt: skip


def damaged(state: dict[str, Any]) -> str | None:
    """What in a state.json (a dict with a tasks dict) this executor did not write, or None."""
    if not isinstance(state.get("state"), str):
        return f"state is {state.get('state')!r}"[:200]
    for key, task in state["tasks"].items():
        if not key.isascii() or not key.isdigit() or not isinstance(task, dict):
            return f"task {key!r} is {task!r}"[:200]
        for field, kind in PUBLIC_TYPES.items():
            value = task.get(field)
            if (value is None and field != "state") or (
                isinstance(value, kind) and not isinstance(value, bool)
            ):
                continue
            return f"task {key} {field} is {value!r}"[:200]
    return None


def fold(tasks: Sequence[dict[str, Any]]) -> str:
    states = [t["state"] for t in tasks]
    if all(s in FINISHED for s in states):
        return next((w for w in WORST_FIRST if w in states), "COMPLETED")
    fresh = all(t["state"] == "PENDING" and not t["attempts"] for t in tasks)
    return "PENDING" if fresh else "RUNNING"


def lock(jobdir: Path, patience_s: float = 0.0) -> int | None:
    """The executor lock's descriptor, or None while another process holds it. ``start`` and
    ``cancel`` only probe it (held for microseconds); ``run`` is patient, so a probe never
    turns a starting executor away."""
    fd = os.open(str(jobdir / "executor.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + patience_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def locked(jobdir: Path) -> bool:
    fd = lock(jobdir)
    if fd is not None:
        os.close(fd)
    return fd is None


def held(jobdir: Path) -> bool | None:
    """Whether a process holds ``jobdir``'s executor lock; None without a lock file (a job
    started before handed locks). A probe that creates nothing and holds for microseconds."""
    try:
        fd = os.open(str(jobdir / "executor.lock"), os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock the probe took
    return False


def handed(jobdir: Path, fd: int) -> bool:
    """Whether ``fd`` is ``jobdir``'s executor lock, locked (the starter's, inherited: the one
    lock held from before ``job.json`` exists until the executor ends)."""
    try:
        same = os.fstat(fd).st_ino == (jobdir / "executor.lock").stat().st_ino
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ours already: granted at once
    except OSError:
        return False
    return same
