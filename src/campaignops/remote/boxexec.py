"""The box executor: runs one job's tasks on a GPU box reached over SSH (docs/runner.md, "The box
executor"). Standard library only, Python 3.8+, one file: the ssh backend copies it byte for byte
to ``<workdir>/.campaignops/boxexec-<sha256[:12]>.py``. Every command prints one JSON document.

``start JOBDIR`` detaches ``run JOBDIR`` (tmux, else a new session) unless an executor holds
``JOBDIR/executor.lock``; ``run`` is the loop and writes ``state.json`` atomically on every change;
``status ROOT [JOB…]`` answers for every job of an instance at once; ``cancel JOBDIR [--tasks
1,4]``; ``outputs JOBDIR``; ``verdict ROOT JOB=STATE…`` (afterok across boxes); ``tails ROOT JOB=1,4…`` (the ended tasks'
log tails that ``status --refresh`` brings home). Each task attempt runs under ``wrap`` (this file again), the leader
of its own session, which writes ``receipts/<index>.<attempt>.json`` when the task ends: the
receipt, not the executor, is the record that survives an executor killed meanwhile.

Its "supervision" section is the one supervisor's rules (a task's own session, time limit,
warning, TERM then KILL, memory limit, cancel requests, afterok, reaping): the local backend's
executor imports them for every local CPU job, so they are written once.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED")
# A finished job is as bad as its worst task (campaignops.model.states.WORST_FIRST).
WORST_FIRST = ("NODE_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "FAILED")
# Sets up conda's shell functions from the manifest's conda_hook ($1) in any of the
# experiment-queue's forms: an `eval "$(... shell.bash hook)"` string, a conda root (its
# etc/profile.d/conda.sh), the conda program itself (an executable not named *.sh), or a script
# to source (conda.sh). With no
# hook: the conda on PATH, else the first usual install root that has a conda.sh.
CONDA_ROOTS = (
    "~/miniconda3 ~/anaconda3 ~/miniforge3 ~/mambaforge /opt/conda /opt/miniconda3 /opt/anaconda3"
)
CONDA_SETUP = (
    'case "$1" in eval\\ *) eval "$1" ;; '
    '"") if command -v conda >/dev/null; then eval "$(conda shell.bash hook)"; else '
    "for r in " + CONDA_ROOTS.replace("~", '"$HOME"') + "; do "
    '[ -f "$r/etc/profile.d/conda.sh" ] && { . "$r/etc/profile.d/conda.sh"; break; }; done; fi ;; '
    '*) if [ -d "$1" ]; then . "$1/etc/profile.d/conda.sh"; '
    'elif [ -x "$1" ] && [ "${1%.sh}" = "$1" ]; then eval "$("$1" shell.bash hook)"; '
    'else . "$1"; fi ;; esac'
)
REASONS = {96: "precondition", 97: "output-missing"}  # the rendered script's own exit codes
NVSMI = (
    "nvidia-smi",
    "--query-gpu=index,memory.used,memory.total",
    "--format=csv,noheader,nounits",
)
PUBLIC = ("state", "exit_code", "start", "end", "attempts", "gpu", "reason")
SESSION = "campaignops-"
TMUX_SOCKET = os.environ.get("BOXEXEC_TMUX_SOCKET", "campaignops")
TICK_S = float(os.environ.get("BOXEXEC_TICK_S", "1.0"))
GPU_POLL_S = float(os.environ.get("BOXEXEC_GPU_POLL_S", "10"))  # a busy box is not asked more
TAIL_LINES, TAIL_BYTES = 200, 1 << 18
HOME_TAIL_BYTES = 1 << 16  # a log tail the runner fetches (cmd_tails)
STARTING_S = float(os.environ.get("BOXEXEC_STARTING_S", "60"))
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


class BoxError(Exception):
    def __init__(self, *, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)


def proc_ticks(pid: Any) -> int | None:
    """The start time of a live process (``/proc/PID/stat`` field 22), None for a dead or zombie
    one: a pid alone may be reused, and ``kill -0`` succeeds on a zombie."""
    if not isinstance(pid, int) or pid <= 1:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(record: Any) -> bool:
    if not isinstance(record, dict) or record.get("ticks") is None:
        return False
    return bool(proc_ticks(record.get("pid")) == record["ticks"])


# --- supervision: the rules every task runs under ------------------------------------------------
# The one supervisor (docs/architecture.md, "The supervisor"): this executor on a box or for a
# local GPU job, and the local backend's executor (campaignops.backends.local.executor) for every
# other local job, call these, so a start, a time limit, the warning, TERM then KILL, a memory
# limit, a cancel request, afterok and reaping mean one thing everywhere. A task's clock is a
# dict (the box keeps it in the task's record in state.json): t0, warned, stop (the end a TERM
# or KILL decided: TIMEOUT, CANCELLED, OUT_OF_MEMORY), term_at, killed; the caller picks the
# time base (wall time survives an executor's restart, monotonic time does not jump).

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


# --- the box executor ------------------------------------------------------------------------------


def parse_gpus(text: str) -> list[dict[str, Any]]:
    """Rows of nvidia-smi's ``index,memory.used,memory.total`` query; ``[N/A]`` reads None."""

    def mib(cell: str) -> int | None:
        try:
            return int(float(cell.split()[0]))
        except (ValueError, IndexError):
            return None

    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[0].isascii() and cells[0].isdigit():
            used, total = mib(cells[1]), mib(cells[2])
            rows.append(
                {"index": int(cells[0]), "memory_used_mib": used, "memory_total_mib": total}
            )
    return rows


def query_gpus() -> tuple[list[dict[str, Any]] | None, str]:
    """(rows, "") or (None, why nvidia-smi gave none)."""
    try:
        out = subprocess.run(
            NVSMI, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return None, "nvidia-smi is not on PATH"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi: {exc}"
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).decode("utf-8", "replace").strip().splitlines()
        return None, "nvidia-smi exited {}: {}".format(out.returncode, lines[0] if lines else "")
    return parse_gpus(out.stdout.decode("utf-8", "replace")), ""


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


class Executor:
    def __init__(self, jobdir: Path) -> None:
        self.dir, self.job = jobdir, load_job(jobdir)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.gpu_wait_until, self.gpu_why, self.last = 0.0, "", ""
        state = read_json(jobdir / "state.json")
        if not isinstance(state, dict) or not isinstance(state.get("tasks"), dict):
            state = {"job_id": self.job["job_id"], "state": "PENDING", "reason": None,
                     "started": None, "ended": None, "tasks": {}}  # fmt: skip
        why = damaged(state)
        if why is not None:  # refused, never overwritten: what ran is not known
            raise BoxError(message=f"{jobdir}/state.json is damaged: {why}",
                           hint="read it; remove the job directory once you know why")  # fmt: skip
        for i in self.job["indices"]:
            state["tasks"].setdefault(str(i), {
                "state": "PENDING", "exit_code": None, "start": None, "end": None, "attempts": 0,
                "gpu": None, "reason": None, "pid": None, "ticks": None, "t0": None,
                "not_before": 0.0, "log_offset": 0, "stop": None, "term_at": None,
                "warned": False, "killed": False,
            })  # fmt: skip
        self.state, self.tasks = state, state["tasks"]
        self.order = [str(i) for i in self.job["indices"]]

    # --- files ------------------------------------------------------------------------------

    def save(self) -> None:
        text = json.dumps(self.state, sort_keys=True)
        if text != self.last:  # an unchanged state is not rewritten every tick
            write_json(self.dir / "state.json", self.state)
            self.last = text

    def log(self, key: str) -> Path:
        name = str(self.job.get("log_name") or "{}-{}_{{index}}.out".format(
            self.job.get("name", "job"), self.job["job_id"]))  # fmt: skip
        name = name.replace("{index}", key).replace("%a", key)
        return (
            Path(self.job.get("workdir") or self.dir) / str(self.job.get("log_dir", "logs")) / name
        )

    def parents(self) -> str:
        """afterok: "ok", "wait" or "never". A parent's share on this box is read from its
        state file; a parent with tasks on other boxes also needs the runner's verdict (this
        box cannot see them), which `campaign status --refresh` writes once every task of
        the parent on every box has ended (docs/runner.md "afterok across boxes")."""
        states = []
        for entry in self.job.get("after") or ():
            parent = parent_of(entry) or {}
            if parent.get("here"):
                path = self.dir.parent / parent["job"]
                record = read_json(path / "state.json")
                found = record.get("state") if isinstance(record, dict) else "PENDING"
                states.append(found if path.is_dir() else "UNKNOWN")
            if parent.get("elsewhere"):
                states.append(verdict_of(self.dir.parent, parent["job"]) or "PENDING")
        return afterok(states, FINISHED)

    def awaits(self) -> list[str]:
        """The parents whose verdict this job still needs from the runner (none once it ended:
        a cancelled job needs nothing)."""
        if self.state.get("state") in FINISHED:
            return []
        found = [parent_of(e) or {} for e in self.job.get("after") or ()]
        return [
            p["job"] for p in found
            if p.get("elsewhere") and verdict_of(self.dir.parent, p["job"]) is None
        ]  # fmt: skip

    # --- GPUs --------------------------------------------------------------------------------

    def held(self) -> set[int]:
        """GPUs a live task of any job on this box holds (a task that just started has not
        allocated its memory yet, so nvidia-smi alone would hand its GPU out again)."""
        gpus = {t["gpu"] for t in self.tasks.values() if t["state"] == "RUNNING"}
        for sibling in self.dir.parent.iterdir() if self.dir.parent.is_dir() else ():
            record = read_json(sibling / "state.json") if sibling != self.dir else None
            for t in (record.get("tasks") or {}).values() if isinstance(record, dict) else ():
                if isinstance(t, dict) and t.get("state") == "RUNNING" and alive(t):
                    gpus.add(t.get("gpu"))
        return {g for g in gpus if isinstance(g, int)}

    def pick_gpu(self) -> int | None:
        if time.time() < self.gpu_wait_until:
            return None
        rows, why = query_gpus()  # again before every launch: memory moves
        if rows is None:
            self.gpu_why = why
        else:
            mine, threshold = self.held(), int(self.job.get("gpu_free_threshold_mib") or 500)
            by_index = {r["index"]: r for r in rows}
            notes = []
            for gpu in self.job["gpus"]:
                row, used = by_index.get(gpu), by_index.get(gpu, {}).get("memory_used_mib")
                if row is None:
                    notes.append(f"{gpu}: not in nvidia-smi's list")
                elif used is None:
                    notes.append(f"{gpu}: memory.used is [N/A]")
                elif used >= threshold:
                    notes.append(f"{gpu}: {used} MiB used")
                elif gpu in mine:
                    notes.append(f"{gpu}: held by a task")
                else:
                    return int(gpu)
            self.gpu_why = "no GPU below {} MiB ({})".format(threshold, "; ".join(notes))
        self.gpu_wait_until = time.time() + GPU_POLL_S
        return None

    # --- tasks -------------------------------------------------------------------------------

    def argv(self) -> list[str]:
        script, conda = str(self.dir / "script.sh"), self.job.get("conda")
        if not conda:
            return ["bash", script]
        hook = str(conda.get("hook") or "")
        line = CONDA_SETUP + ' && conda activate "$2" && exec bash "$3"'
        return ["bash", "-c", line, "boxexec", hook, str(conda["env"]), script]

    def launch(self, key: str, gpu: int | None) -> None:
        t = self.tasks[key]
        t["attempts"] += 1
        log = self.log(key)
        receipt = self.dir / "receipts" / "{}.{}.json".format(key, t["attempts"])
        env = dict(os.environ, CAMPAIGN_TASK_INDEX=key)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        wrap = [sys.executable, str(Path(__file__).resolve()), "wrap", str(receipt), "--"]
        try:
            receipt.parent.mkdir(exist_ok=True)
            t["log_offset"] = log.stat().st_size if log.exists() else 0
            cwd = str(self.job.get("workdir") or self.dir)
            proc = spawn(wrap + self.argv(), log=log, env=env, cwd=cwd)
        except OSError as exc:
            t.update(state="FAILED", start=now(), end=now(), reason=f"cannot start: {exc}")
            return
        self.procs[key] = proc
        t.update(fresh_clock(time.time()), state="RUNNING", pid=proc.pid, ticks=proc_ticks(proc.pid),
                 start=now(), end=None, exit_code=None, gpu=gpu, reason=None)  # fmt: skip
        self.save()  # at once: an executor killed now must not start it a second time

    def poll(self, key: str) -> None:
        t, proc = self.tasks[key], self.procs.get(key)
        if proc is not None:
            code = reap(proc)
            if code is not None:
                return self.ended(key, code)
        elif not alive(t):  # adopted from an earlier executor: only its receipt can tell
            return self.ended(key, None)
        warning = self.job.get("warning")  # to the wrapper, which passes it to the batch shell
        police(
            t, t["pid"], now=time.time(), limit=self.job.get("time_limit_s") or None,
            warning=(str(warning["signal"]), warning["seconds"]) if warning else None,
            kill_wait=float(self.job.get("kill_wait_s") or KILL_WAIT_S),
        )  # fmt: skip
        return None

    def ended(self, key: str, code: int | None) -> None:
        t = self.tasks[key]
        self.procs.pop(key, None)
        receipt = read_json(self.dir / "receipts" / "{}.{}.json".format(key, t["attempts"]))
        if isinstance(receipt, dict) and isinstance(receipt.get("exit_code"), int):
            code = receipt["exit_code"]
        t.update(end=now(), exit_code=code, pid=None, ticks=None)
        self.gpu_wait_until = 0.0  # its GPU may be free now: ask at the next launch
        retry = self.job.get("oom_retry")
        if t["stop"]:
            t["state"] = t["stop"]
        elif code is None:  # died with no receipt while no executor watched: run it again
            t.update(state="PENDING", gpu=None, end=None, reason="lost: ended without a receipt")
        elif code == 0:
            t["state"] = "COMPLETED"
        elif code in REASONS:
            t.update(state="FAILED", reason=REASONS[code])
        elif retry and self.oom_seen(key, retry.get("patterns") or ()):
            if t["attempts"] < int(retry.get("max_attempts") or 1):
                reason = "oom: attempt {} of {}; retried".format(
                    t["attempts"], retry["max_attempts"]
                )
                delay = float(retry.get("delay_s") or 0)
                # Each retried attempt's end stays in the status (the runner's ledger keeps it).
                t.setdefault("tries", []).append({"attempt": t["attempts"], "start": t["start"],
                    "end": t["end"], "exit_code": code, "gpu": t["gpu"], "reason": reason})  # fmt: skip
                t.update(state="PENDING", gpu=None, reason=reason, not_before=time.time() + delay)
            else:
                t.update(state="OUT_OF_MEMORY", reason="oom: {} attempts".format(t["attempts"]))
        else:
            t["state"] = "FAILED"

    def oom_seen(self, key: str, patterns: Sequence[str]) -> bool:
        """A pattern in the last lines this attempt wrote (not an earlier attempt's OOM)."""
        log, start = self.log(key), int(self.tasks[key]["log_offset"])
        try:
            with log.open("rb") as f:
                f.seek(max(start, log.stat().st_size - TAIL_BYTES))
                lines = f.read().decode("utf-8", "replace").splitlines()[-TAIL_LINES:]
        except OSError:
            return False
        compiled = [re.compile(p) for p in patterns]
        return any(p.search(line) for p in compiled for line in lines)

    # --- the loop ----------------------------------------------------------------------------

    def resume(self) -> None:
        """Tasks an earlier executor left RUNNING: alive → adopted; else the receipt decides."""
        for key, t in self.tasks.items():
            if t["state"] == "RUNNING" and not alive(t):
                self.ended(key, None)

    def step(self, launching: bool) -> bool:
        """One tick; True once every task has finished."""
        everything, some = cancel_requests(self.dir)
        verdict = self.parents()
        for key in self.order:
            t = self.tasks[key]
            if t["state"] == "RUNNING":
                if everything or key in some:
                    stop(t, t["pid"], "CANCELLED", time.time())
                self.poll(key)
            elif t["state"] == "PENDING" and (everything or key in some):
                t.update(state="CANCELLED", reason="cancelled", end=now())
            elif t["state"] == "PENDING" and verdict == "never":
                t.update(state="CANCELLED", reason="DependencyNeverSatisfied", end=now())
            elif t["state"] == "PENDING" and verdict == "wait":
                t["reason"] = "Dependency"  # Slurm's words, as for the end above
        if launching and verdict == "ok":
            self.start_ready()
        tasks = [self.tasks[k] for k in self.order]
        waiting = [t["reason"] for t in tasks if t["state"] == "PENDING" and t["reason"]]
        self.state["state"] = fold(tasks)
        self.state["reason"] = "Dependency" if verdict == "wait" else (waiting or [None])[0]
        return self.state["state"] in FINISHED

    def start_ready(self) -> None:
        gpus = self.job.get("gpus")
        # With GPUs, the GPUs are the limit (one task each); max_parallel may lower it.
        cap = self.job.get("max_parallel") or (1 << 30 if gpus else os.cpu_count() or 1)
        running = sum(t["state"] == "RUNNING" for t in self.tasks.values())
        ready = [k for k in self.order if self.tasks[k]["state"] == "PENDING"
                 and self.tasks[k]["not_before"] <= time.time()]  # fmt: skip
        for n, key in enumerate(ready):
            gpu = None
            if running >= cap:
                why = "JobArrayTaskLimit"  # Slurm's word for a task held back by the cap
            elif gpus:
                # One launch at a time on the box: from the query to the saved launch, so two
                # executors never both see a GPU free and both take it.
                with self.gpu_lock():
                    gpu = self.pick_gpu()
                    if gpu is not None:
                        self.launch(key, gpu)
                why = "" if gpu is not None else self.gpu_why
            else:
                why = ""
                self.launch(key, None)
            if why:
                for k in ready[n:]:
                    self.tasks[k]["reason"] = why
                break
            running += 1

    @contextlib.contextmanager
    def gpu_lock(self) -> Iterator[None]:
        fd = os.open(str(self.dir.parent / ".gpus.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def run(self) -> None:
        self.state["executor"] = {"pid": os.getpid(), "ticks": proc_ticks(os.getpid())}
        self.state["started"] = self.state.get("started") or now()
        self.resume()
        while not self.step(launching=True):
            self.save()
            time.sleep(TICK_S)
        self.state["ended"] = self.state.get("ended") or now()
        self.save()

    def settle(self) -> None:
        """Carry out cancel requests with no executor alive: stop, wait, kill; start nothing."""
        self.resume()
        while True:
            self.step(launching=False)
            self.save()
            # Until each stopped task's end is recorded, not merely until it is dead: one that
            # died after this step's poll is recorded by the next step (it was left RUNNING).
            if not any(t["stop"] and t["state"] == "RUNNING" for t in self.tasks.values()):
                return
            time.sleep(min(TICK_S, 0.2))


# --- the commands ------------------------------------------------------------------------------


def tmux(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["tmux", "-L", TMUX_SOCKET, *args], stdin=subprocess.DEVNULL, capture_output=True,
        check=False,
    )  # fmt: skip


def clean_sessions() -> list[str]:
    """Kill ``campaignops-*`` sessions whose job finished, whose directory is gone, or that
    hold no executor (a pane left behind; a session younger than a minute may still be
    starting its executor)."""
    form = "#{session_name}\t#{session_created}\t#{@campaignops_jobdir}"
    out, killed = tmux("list-sessions", "-F", form), []
    for line in out.stdout.decode("utf-8", "replace").splitlines() if out.returncode == 0 else ():
        name, created, jobdir = [*line.split("\t"), "", ""][:3]
        if not name.startswith(SESSION) or not jobdir:
            continue
        state = read_json(Path(jobdir) / "state.json")
        finished = isinstance(state, dict) and state.get("state") in FINISHED
        old = created.isdigit() and time.time() - int(created) > STARTING_S
        if not Path(jobdir).is_dir() or finished or (old and not locked(Path(jobdir))):
            tmux("kill-session", "-t", "=" + name)
            killed.append(name)
    return killed


def cmd_start(jobdir: Path) -> dict[str, Any]:
    job = Executor(jobdir).job  # refuses here, not in the detached run, what it cannot follow
    cleaned = clean_sessions() if shutil.which("tmux") else []
    if locked(jobdir):
        return {"started": False, "pid": holder(jobdir), "via": None, "cleaned": cleaned}
    # Two racing starts may both get here: the second executor finds the lock taken and ends.
    (jobdir / "executor.lock").write_bytes(b"")  # the pid of the executor started below comes
    argv = [sys.executable, str(Path(__file__).resolve()), "run", str(jobdir)]
    log = jobdir / "executor.log"
    if shutil.which("tmux") and os.environ.get("BOXEXEC_DETACH") != "setsid":
        name = SESSION + str(job["job_id"])
        tmux("kill-session", "-t", "=" + name)  # a pane whose executor is gone (lock was free)
        # A tmux session gets the environment the tmux server started with, and a command line
        # has a size limit: ours goes through a file, so the tasks see what they would under
        # setsid.
        environ = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        write_json(jobdir / "executor.env", environ, mode=0o600)  # it may hold secrets
        words = ["exec", *argv, "--environ", str(jobdir / "executor.env")]
        line = "{} >>{} 2>&1".format(" ".join(shlex.quote(w) for w in words), shlex.quote(str(log)))
        out = tmux(
            "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", name, "-c", str(jobdir), line
        )
        if out.returncode != 0:
            raise BoxError(message="tmux: " + out.stderr.decode("utf-8", "replace").strip(),
                           hint="start again; BOXEXEC_DETACH=setsid avoids tmux")  # fmt: skip
        tmux("set-option", "-t", "=" + name + ":", "@campaignops_jobdir", str(jobdir))
        via, pid = "tmux", int(out.stdout.split()[0])
    else:
        with log.open("ab") as out_log:
            proc = subprocess.Popen(
                argv, cwd=str(jobdir), stdin=subprocess.DEVNULL, stdout=out_log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        via, pid = "setsid", proc.pid
    # Return once the executor holds the lock, so a start right after this one sees it.
    return {"started": True, "pid": holder(jobdir, 10.0) or pid, "via": via, "cleaned": cleaned}


def holder(jobdir: Path, patience_s: float = 2.0) -> int | None:
    """The pid the lock's holder wrote into the lock file (it may be a moment late)."""
    deadline = time.monotonic() + patience_s
    while True:
        text = (jobdir / "executor.lock").read_text(encoding="ascii", errors="replace").strip()
        if text.isdigit() or time.monotonic() >= deadline:
            return int(text) if text.isdigit() else None
        time.sleep(0.05)


def cmd_run(jobdir: Path, environ: str | None) -> dict[str, Any]:
    if environ:
        os.environ.clear()
        os.environ.update(read_json(Path(environ)) or {})
    fd = lock(jobdir, patience_s=2.0)
    if fd is None:
        return {"ran": False, "reason": f"another executor holds {jobdir}/executor.lock"}
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    executor = Executor(jobdir)
    executor.run()
    return {"ran": True, "state": executor.state["state"]}


def view(jobdir: Path) -> dict[str, Any]:
    try:
        executor = Executor(jobdir)
    except BoxError as exc:
        return {"state": "UNKNOWN", "executor_alive": False, "tasks": {}, "error": exc.message}
    state, tasks = executor.state, executor.tasks
    public = {k: {f: tasks[k].get(f) for f in PUBLIC} for k in executor.order}
    for k in executor.order:  # the attempts it ran again after a GPU OOM, once there are any
        public[k].update({"tries": tasks[k]["tries"]} if tasks[k].get("tries") else {})
    return {
        "state": state["state"],
        "executor_alive": alive(state.get("executor")),
        "tasks": public,
        "awaits": executor.awaits(),
    }


def cmd_status(root: Path, names: Sequence[str]) -> dict[str, Any]:
    # A name starting with "." is a job directory still being written (renamed when whole).
    found = root.iterdir() if root.is_dir() else ()
    listed = sorted(p for p in found if p.is_dir() and not p.name.startswith("."))
    dirs = [root / n for n in names] if names else listed
    jobs = {d.name: view(d) for d in dirs}
    rows = query_gpus()[0] if shutil.which("nvidia-smi") else None
    return {"now": now(), "jobs": jobs, "gpus": rows}


def cmd_verdict(root: Path, pairs: Sequence[str]) -> dict[str, Any]:
    """Record the runner's verdicts (``JOB=STATE``, a final state) on this box; a verdict
    already there is kept (a job's end never changes)."""
    parsed = [p.partition("=")[::2] for p in pairs]
    bad = [j + "=" + s for j, s in parsed if not NAME.fullmatch(j) or s not in FINISHED]
    if bad:
        raise BoxError(message=f"verdicts {bad} are not JOB=STATE with a final state",
                       hint="states: " + ", ".join(FINISHED))  # fmt: skip
    where = verdicts_dir(root)
    where.mkdir(parents=True, exist_ok=True)
    written = {}
    for job, state in parsed:
        kept = verdict_of(root, job)
        if kept is None:
            write_json(where / (job + ".json"), {"job_id": job, "state": state, "at": now()})
        written[job] = kept or state
    return {"verdicts": written}


def cmd_cancel(jobdir: Path, tasks: str | None) -> dict[str, Any]:
    executor = Executor(jobdir)
    keys = executor.order if tasks is None else [k.strip() for k in tasks.split(",") if k.strip()]
    unknown = [k for k in keys if k not in executor.tasks]
    if unknown:
        raise BoxError(message="no task {} in {}".format(",".join(unknown), jobdir),
                       hint="the tasks are {}".format(",".join(executor.order)))  # fmt: skip
    request_cancel(jobdir, None if tasks is None else keys)
    fd = lock(jobdir)
    if fd is None:  # the executor reads the request on its next tick
        return {"requested": keys, "by": "executor"}
    try:
        executor = Executor(jobdir)  # what the executor that just ended wrote
        executor.settle()
    finally:
        os.close(fd)
    return {"requested": keys, "by": "cancel", "state": executor.state["state"]}


def digest(path: Path) -> dict[str, Any]:
    sha = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return {"size": path.stat().st_size, "sha256": sha.hexdigest()}


def cmd_outputs(jobdir: Path) -> dict[str, Any]:
    executor = Executor(jobdir)
    base, wanted = Path(executor.job.get("workdir") or jobdir), executor.job.get("outputs") or {}
    found: dict[str, Any] = {}
    for key in executor.order:
        if executor.tasks[key]["state"] not in FINISHED:
            continue
        found[key] = []
        for rel in wanted.get(key) or ():
            path = base / rel
            if path.is_dir():  # each file in it, by its path under the output's; hidden
                # names (a wrapper's .lock, rsync's .rsync-partial) are bookkeeping, not results
                files = sorted(
                    f
                    for f in (p.relative_to(path) for p in path.rglob("*") if p.is_file())
                    if not any(part.startswith(".") for part in f.parts)
                )
                found[key] += [dict(digest(path / f), path=f"{rel}/{f}") for f in files]
            else:
                entry = digest(path) if path.is_file() else {"size": None, "sha256": None}
                found[key].append(dict(entry, path=rel))
    return found


def cmd_tails(root: Path, pairs: Sequence[str], running: bool = False) -> dict[str, Any]:
    """The last TAIL_LINES lines (at most HOME_TAIL_BYTES) of each named task's log, for the
    tasks (``JOB=1,4``) that have ended (and, ``running``, those still running: cancel's
    tail): what a refresh brings home (docs/runner.md)."""
    found: dict[str, Any] = {}
    for job, _, keys in (p.partition("=") for p in pairs):
        try:
            executor = Executor(root / job) if NAME.fullmatch(job) else None
        except BoxError:
            executor = None
        for key in keys.split(",") if executor else ():
            state = executor.tasks.get(key, {}).get("state") if executor else None
            if executor and (state in FINISHED or (running and state == "RUNNING")):
                with contextlib.suppress(OSError), executor.log(key).open("rb") as f:
                    f.seek(max(0, executor.log(key).stat().st_size - HOME_TAIL_BYTES))
                    lines = f.read().decode("utf-8", "replace").splitlines()[-TAIL_LINES:]
                    found.setdefault(job, {})[key] = "".join(x + "\n" for x in lines)
    return found


def cmd_wrap(receipt: Path, argv: Sequence[str]) -> int:
    """Run one task attempt and write its receipt. TERM/INT/HUP reach the task through the
    group; the wrapper outlives them to write the receipt. The warning (sent to the wrapper
    only) is passed to the batch shell, which passes it to the task's main process."""
    child: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if child:
            with contextlib.suppress(ProcessLookupError):  # it may have just ended
                os.kill(child[0], signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: None)  # a handler, not SIG_IGN: exec resets it
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    proc = subprocess.Popen(list(argv))
    child.append(proc.pid)
    code = proc.wait()
    code = code if code >= 0 else 128 - code
    write_json(receipt, {"exit_code": code, "end": now()})
    return code


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["wrap"] and "--" in words:  # wrap RECEIPT -- ARGV…: no option parsing
        return cmd_wrap(Path(words[1]), words[words.index("--") + 1 :])
    parser = argparse.ArgumentParser(prog="boxexec", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    helps = {
        "start": "start the job's executor, detached, unless one runs; returns once it runs",
        "run": "the executor itself (what start detaches): runs the tasks to their end",
        "outputs": "size and sha256 of each finished task's declared outputs",
    }
    for name, text in helps.items():
        sub.add_parser(name, help=text, description=text).add_argument("jobdir")
    sub.choices["run"].add_argument("--environ", help="a JSON file: the environment to run in")
    text = "every job under ROOT (or the named ones) and the GPUs, in one document"
    status = sub.add_parser("status", help=text, description=text)
    status.add_argument("root", help="<workdir>/.campaignops/jobs")
    status.add_argument("jobs", nargs="*")
    text = "record the runner's JOB=STATE verdicts: a parent's end seen on every box (afterok)"
    verdict = sub.add_parser("verdict", help=text, description=text)
    verdict.add_argument("root", help="<workdir>/.campaignops/jobs")
    verdict.add_argument("pairs", nargs="+", metavar="JOB=STATE")
    text = "the log tails of the named tasks that have ended (JOB=1,4), in one document"
    tails = sub.add_parser("tails", help=text, description=text)
    tails.add_argument("root", help="<workdir>/.campaignops/jobs")
    tails.add_argument("pairs", nargs="*", metavar="JOB=INDICES")
    tails.add_argument("--running", action="store_true", help="running tasks too (cancel's)")
    text = "stop the job's tasks (or --tasks): TERM, then KILL; tasks not started never start"
    cancel = sub.add_parser("cancel", help=text, description=text)
    cancel.add_argument("jobdir")
    cancel.add_argument("--tasks", help="comma-separated task indices; default: every task")
    args = parser.parse_args(argv)
    try:
        if args.command == "status":
            result = cmd_status(Path(args.root), args.jobs)
        elif args.command == "verdict":
            result = cmd_verdict(Path(args.root), args.pairs)
        elif args.command == "tails":
            result = cmd_tails(Path(args.root), args.pairs, args.running)
        else:
            jobdir = Path(args.jobdir).absolute()
            if args.command == "start":
                result = cmd_start(jobdir)
            elif args.command == "run":
                result = cmd_run(jobdir, args.environ)
            elif args.command == "cancel":
                result = cmd_cancel(jobdir, args.tasks)
            else:
                result = cmd_outputs(jobdir)
    except BoxError as exc:
        print(json.dumps({"error": exc.message, "hint": exc.hint}))
        return 2
    except OSError as exc:
        print(json.dumps({"error": str(exc), "hint": "check the job directory on the box"}))
        return 2
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
