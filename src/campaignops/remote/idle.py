"""A box that stops itself once idle: the watcher (docs/runner.md, "Idle boxes stop themselves").

A job the ssh backend placed may carry ``idle_stop`` in its job.json: ``{"minutes", "command"}``,
campaign.yaml's ``budgets.idle_stop_minutes`` and the backend page's ``self_stop``. When such a
job's executor ends, it hands on to the box's one watcher (``hand_on``: started detached unless
one runs, ``<state>/idle.lock`` held while it lives). The watcher looks at every job under the
jobs directory each tick: while one has a live executor or a running task, or is still arriving
(its directory just placed), the box is busy and the countdown starts again from the last task's
end; once nothing has run for ``minutes`` after the last task of any job ended, it runs
``command`` (``bash -c``, in the executor's environment) once. A stop that fails is written to
``idle-stop.log`` in the directory of the job whose setting it followed and tried again at most
STOP_ATTEMPTS times, never for ever; a job arriving meanwhile cancels it. The newest job's
setting rules (a newer job without one turns the watcher off). ``<state>/idle.json`` says what
the watcher last saw.

Standard library only, Python 3.8+ (the package travels to boxes: campaignops.remote.artifact).
"""

from __future__ import annotations

import fcntl
import math
import os
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

from campaignops.remote.jobstate import FINISHED
from campaignops.remote.records import alive, now, proc_ticks, program, read_json, write_json

LOG = "idle-stop.log"  # in the job directory whose setting the stop followed
RECORD, LOCK, OUT = "idle.json", "idle.lock", "idle.out"  # in <state>, beside jobs/
STOP_ATTEMPTS = 3
STOP_TIMEOUT_S = 300.0  # one run of the provider's stop command
OUTPUT_BYTES = 2000  # of the command's output, kept in the log
ARRIVING_S = 60.0  # a job directory this young with no state.json is a job being started


class Setting(NamedTuple):
    minutes: float
    command: str


class Survey(NamedTuple):
    """What the jobs directory says at one look."""

    busy: str | None  # a job that has a live executor or running task, or is arriving
    last_end: datetime | None  # the last end of a task of any job
    newest: Path | None  # the newest job's directory: its setting rules


def setting(job: Any) -> Setting | None:
    """A job.json's ``idle_stop``, or None (none given, or not one the watcher can follow)."""
    given = job.get("idle_stop") if isinstance(job, dict) else None
    if not isinstance(given, dict):
        return None
    minutes, command = given.get("minutes"), given.get("command")
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        return None
    if not math.isfinite(minutes) or minutes <= 0 or not isinstance(command, str):
        return None
    return Setting(float(minutes), command) if command.strip() else None


def _when(text: Any) -> datetime | None:
    try:
        found = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return None if found is None or found.tzinfo is None else found


def _young(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime < ARRIVING_S
    except OSError:
        return False


def _busy(jobdir: Path, state: Any) -> bool:
    if not isinstance(state, dict):
        return _young(jobdir)  # placed, its executor not started yet
    if state.get("state") in FINISHED:
        return False
    tasks = state.get("tasks")
    running = isinstance(tasks, dict) and any(
        isinstance(t, dict) and t.get("state") == "RUNNING" and alive(t) for t in tasks.values()
    )
    # An unfinished job whose executor is dead runs nothing: it holds the box for no one.
    return running or alive(state.get("executor"))


def survey(root: Path) -> Survey:
    """One look at every job under ``root`` (``<workdir>/.campaignops/jobs``)."""
    busy, last, newest, newest_at = None, None, None, ""
    for jobdir in sorted(root.iterdir()) if root.is_dir() else ():
        if not jobdir.is_dir():
            continue
        if jobdir.name.startswith("."):  # a job directory still being written
            busy = busy or (jobdir.name if _young(jobdir) else None)
            continue
        state = read_json(jobdir / "state.json")
        if _busy(jobdir, state):
            busy = busy or jobdir.name
        tasks = state.get("tasks") if isinstance(state, dict) else None
        for task in tasks.values() if isinstance(tasks, dict) else ():
            end = _when(task.get("end")) if isinstance(task, dict) else None
            last = end if end is not None and (last is None or end > last) else last
        job = read_json(jobdir / "job.json")
        submitted = str(job.get("submitted") or "") if isinstance(job, dict) else ""
        if newest is None or submitted > newest_at:
            newest, newest_at = jobdir, submitted
    return Survey(busy, last, newest)


def _held(path: Path) -> int | None:
    """The watcher lock's descriptor, or None while a watcher holds it."""
    fd = os.open(str(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def hand_on(jobdir: Path, job: Any) -> bool:
    """After the executor of ``jobdir`` ended: start the box's watcher, detached, when the job
    carries an idle stop and no watcher runs (a running one reads the newest job itself)."""
    if setting(job) is None:
        return False
    state = jobdir.parent.parent
    fd = _held(state / LOCK)
    if fd is None:
        return False
    os.close(fd)  # a second watcher started meanwhile finds it taken and ends
    with (state / OUT).open("ab") as out:
        subprocess.Popen(
            [*program(), "idle", str(jobdir.parent)], cwd=str(state), stdin=subprocess.DEVNULL,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    return True


def _log(jobdir: Path, line: str) -> None:
    with (jobdir / LOG).open("a", encoding="utf-8") as out:
        out.write(f"{now()} {line}\n")


def _run_stop(jobdir: Path, rule: Setting, since: datetime) -> bool:
    """Run the stop command once, logging it and its answer; True when it exited 0."""
    _log(jobdir, f"no task has run since {since.isoformat()} ({rule.minutes:g} min): "
                 f"running self_stop: {rule.command}")  # fmt: skip
    try:
        done = subprocess.run(
            ["bash", "-c", rule.command], cwd=str(jobdir), stdin=subprocess.DEVNULL,
            capture_output=True, timeout=STOP_TIMEOUT_S, check=False,
        )  # fmt: skip
        code, said = done.returncode, (done.stdout + done.stderr)[-OUTPUT_BYTES:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        code, said = None, str(exc).encode("utf-8", "replace")
    _log(jobdir, f"self_stop exited {code}: {said.decode('utf-8', 'replace').strip()}")
    return code == 0


def _note(where: Path, **fields: Any) -> None:
    """What the watcher saw last, in ``<state>/idle.json`` (for a person, and the tests)."""
    me = {"pid": os.getpid(), "ticks": proc_ticks(os.getpid()), "checked": now()}
    write_json(where / RECORD, dict(me, **fields))


def watch(root: Path) -> dict[str, Any]:
    """The watcher's loop over the jobs directory ``root``, until it has stopped the box, given
    up, or the newest job carries no idle stop; one watcher per box."""
    state = root.parent
    fd = _held(state / LOCK)
    if fd is None:
        return {"watched": False, "reason": f"another watcher holds {state / LOCK}"}
    # Until a look finds the box idle, it was busy "now": a job that arrived and ran nothing
    # (cancelled, its executor gone) still put the countdown back.
    busy_at, failures, retry_at = datetime.now(timezone.utc), 0, 0.0
    while True:
        seen = survey(root)
        rule = setting(read_json(seen.newest / "job.json")) if seen.newest else None
        if rule is None or seen.newest is None:
            _note(state, state="off", job=seen.newest and seen.newest.name)
            return {"watched": True, "stopped": False, "reason": "the newest job sets no idle stop"}
        if seen.busy:
            busy_at = datetime.now(timezone.utc)
        since = max(seen.last_end or busy_at, busy_at)
        stop_at = since + timedelta(minutes=rule.minutes)
        tick = min(30.0, max(0.2, rule.minutes * 3))  # a twentieth of the wait, within bounds
        if seen.busy:
            failures = 0  # a job arrived: the countdown, and any failed stop, start again
        elif datetime.now(timezone.utc) >= stop_at and time.monotonic() >= retry_at:
            _note(state, state="stopping", job=seen.newest.name, idle_since=since.isoformat())
            if _run_stop(seen.newest, rule, since):
                _note(state, state="stopped", job=seen.newest.name, idle_since=since.isoformat())
                return {"watched": True, "stopped": True, "job": seen.newest.name}
            failures += 1
            if failures >= STOP_ATTEMPTS:
                _log(seen.newest, f"self_stop failed {failures} times: not tried again; the "
                                  "box keeps billing until it is stopped by hand")  # fmt: skip
                _note(state, state="failed", job=seen.newest.name, idle_since=since.isoformat())
                return {"watched": True, "stopped": False, "reason": "the stop failed"}
            retry_at = time.monotonic() + max(tick, min(60.0, rule.minutes * 60))
        _note(state, state="busy" if seen.busy else "watching", job=seen.newest.name,
              busy=seen.busy, idle_since=since.isoformat(), stop_at=stop_at.isoformat())  # fmt: skip
        time.sleep(tick)
