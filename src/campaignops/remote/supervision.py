"""The rules every task runs under: the one supervisor (docs/architecture.md, "The supervisor").

The box executor (campaignops.remote.executor) on a box or for a local GPU job, and the local
backend's executor (campaignops.backends.local.executor) for every other local job, call these,
so a start, a time limit, the warning, TERM then KILL, a memory limit, a cancel request, afterok
and reaping mean one thing everywhere. A task's clock is a dict (the box keeps it in the task's
record in state.json): t0, warned, stop (the end a TERM or KILL decided: TIMEOUT, CANCELLED,
OUT_OF_MEMORY), term_at, killed; the caller picks the time base (wall time survives an
executor's restart, monotonic time does not jump). Standard library only, Python 3.8+.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
KILL_WAIT_S = 30  # seconds from TERM to KILL (Slurm's KillWait)
MEM_TICK_S = 1.0  # how often a task's memory is read (a /proc walk)
CANCEL, CANCEL_TASKS = "cancel", "cancel-tasks"  # in the job directory: every task, or some


def killpg(pgid: Any, sig: int) -> None:
    if isinstance(pgid, int) and pgid > 1:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def fresh_clock(t0: float) -> dict[str, Any]:
    """A task's clock as it starts (at ``t0``): no warning sent, no TERM, no KILL."""
    return {"t0": t0, "warned": False, "stop": None, "term_at": None, "killed": False}


def spawn(
    argv: Sequence[str], *, log: Path, env: dict[str, str], cwd: str | None = None
) -> subprocess.Popen[bytes]:
    """Start one task attempt, its output appended to ``log``, as the leader of a session of its
    own: its own process group, so a limit or a cancel hits this task only."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def reap(proc: subprocess.Popen[bytes]) -> int | None:
    """A task's exit code once its leader ended (a signal N reads 128+N, as a shell says it),
    whatever it left running in its group killed first; None while it runs."""
    # WNOWAIT: the leader stays a zombie, so its group id is not reused while what the task
    # left behind in the group is killed.
    if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        return None
    killpg(proc.pid, signal.SIGKILL)
    code = proc.wait()
    return code if code >= 0 else 128 - code


def stop(clock: dict[str, Any], pgid: Any, why: str, now: float) -> None:
    """TERM to the task's group, once; ``why`` is how it will have ended."""
    if clock["stop"] is None:
        clock["stop"], clock["term_at"] = why, now
        killpg(pgid, signal.SIGTERM)


def police(
    clock: dict[str, Any], pgid: Any, *, now: float, limit: float | None,
    warning: tuple[str, float] | None, kill_wait: float, mem_cap: int | None = None,
) -> bool:  # fmt: skip
    """One tick of a running task's rules, in this order: the warning signal ``warning[1]``
    seconds before the limit, to the leader only (``--signal=B:SIG@N``); TERM to the group at
    the limit (TIMEOUT); the memory rule; KILL ``kill_wait`` seconds after any TERM. True when
    the memory rule killed the task just now."""
    age = now - clock["t0"]
    if limit is not None and warning and not clock["warned"] and age >= limit - warning[1]:
        clock["warned"] = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(pgid, getattr(signal, "SIG" + str(warning[0])))
    if limit is not None and age >= limit:
        stop(clock, pgid, "TIMEOUT", now)
    over = mem_cap is not None and over_memory(clock, pgid, mem_cap, now)
    if clock["stop"] and not clock["killed"] and now - clock["term_at"] >= kill_wait:
        clock["killed"] = True
        killpg(pgid, signal.SIGKILL)
    return over


def over_memory(clock: dict[str, Any], pgid: Any, cap: int, now: float) -> bool:
    """Kill a task whose process group holds more resident memory than ``cap`` bytes, at once
    (as Slurm's OverMemoryKill does without cgroups): it ends OUT_OF_MEMORY. Read once every
    MEM_TICK_S, so a shorter spike can pass."""
    if clock["killed"] or now - clock.get("mem_checked", 0.0) < MEM_TICK_S:
        return False
    clock["mem_checked"] = now
    if group_rss(pgid) <= cap:
        return False
    clock["stop"], clock["killed"] = "OUT_OF_MEMORY", True
    killpg(pgid, signal.SIGKILL)
    return True


def afterok(states: Iterable[object], finished: Collection[str]) -> str:
    """Slurm's afterok over the parents' states: "ok" once every one COMPLETED, "never" once
    one ended otherwise or is UNKNOWN (Slurm's DependencyNeverSatisfied), else "wait": a parent
    that COMPLETED while another still runs is no reason to give up."""
    seen = list(states)
    if all(s == "COMPLETED" for s in seen):
        return "ok"
    ended_badly = [s for s in seen if s != "COMPLETED" and (s in finished or s == "UNKNOWN")]
    return "never" if ended_badly else "wait"


def cancel_requests(jobdir: Path) -> tuple[bool, set[str]]:
    """Whether every task is to stop (``cancel``), and the tasks asked to stop one by one
    (``cancel-tasks``, one index a line): read by the executor every tick."""
    try:
        text = (jobdir / CANCEL_TASKS).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return (jobdir / CANCEL).exists(), set(text.split())


def request_cancel(jobdir: Path, tasks: Sequence[str] | None = None) -> None:
    """Ask the job's executor to stop every task (None) or these: one append, never torn."""
    if tasks is None:
        (jobdir / CANCEL).touch()
        return
    fd = os.open(str(jobdir / CANCEL_TASKS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, "".join(k + "\n" for k in tasks).encode("utf-8"))
    finally:
        os.close(fd)


def group_rss(pgid: int) -> int:
    """Resident bytes of every process in the group ``pgid`` (from /proc; 0 where there is
    none, e.g. macOS: memory is then not enforced)."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    proc = Path("/proc")
    total = 0
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
            if int(fields[2]) == pgid:  # state, ppid, pgrp, ... after the command's ")"
                total += int((entry / "statm").read_bytes().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return total


def become_subreaper() -> None:
    # Orphans of a task's processes come back to the executor instead of PID 1 (which, in a
    # container, may never reap them), so an ended task's group really empties.
    if sys.platform == "linux":
        # Imported here, not at the top: only the process that runs tasks needs it, and ctypes
        # is ~3 ms of every executor start (status, submit, cancel …) that never runs one.
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans(leaders: set[int]) -> None:
    """Reap exited adopted orphans; stop at a running task's leader, which reap() reaps."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid in leaders:
            return
        os.waitpid(info.si_pid, 0)


def reap_adopted(within_s: float, poll_s: float) -> None:
    """Reap the orphans just killed with their tasks' groups before reporting the end; give up
    on any still alive after ``within_s`` (one that left its group with setsid: not ours)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(poll_s)
