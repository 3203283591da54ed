"""The local backend's executor: ``python -m campaignops.backends.local.executor submit|run|status|…``.

Files under the state root (``.campaign/local/``), one directory per job:

- ``.next-id``: the id counter, read and bumped under ``flock``, so concurrent submits differ;
  each id also carries 24 random bits (``local-<n>-<6 hex>``), so two clones of one campaign,
  whose counters both start at 1, never put the same id in the merged ledger;
- ``<id>/script.sh``: the submitted script, copied (later edits to the source change nothing);
- ``<id>/job.json``: name, comment, time limit, submitted time (written once, before the start);
- ``<id>/state.json``: written only by the executor (atomically: tmp, fsync, rename), or by
  ``cancel`` once the executor is gone: job and per-task state, exit codes, process groups, times;
- ``<id>/cancel``: a cancel request, seen by an executor that missed or predates the signal;
- ``<id>/cancel-tasks``: single array tasks to cancel (``cancel <id>_<index>``), one index a
  line, appended; the executor reads it every tick and stops (or never starts) those tasks;
- ``<id>/executor.pid``: the executor's pid, written by ``submit`` once it has started it;
- ``<id>/executor.log``: the executor's own output (task output goes to the campaign's logs/).

This module is the executor (``run``: the task loop, limits, reaping) and the command line;
``submit`` and ``cancel`` are in campaignops.backends.local.jobfiles, the readers behind ``status`` and
``siblings`` in campaignops.backends.local.state.

``submit`` starts ``run`` in a new session (``setsid``), so the executor is the leader of its
own process group, which is what ``status`` probes with ``kill -0 -- -PGID``. On Linux the
executor adopts its tasks' orphans (PR_SET_CHILD_SUBREAPER) and reaps them, so a task's group is
empty once its end is written, even where PID 1 is slow to reap. The decisions on
dependencies, lost executors, limits and signals are listed in campaignops.backends.local.machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaignops.backends.local.jobfiles import (
    cancel,
    cancelled_tasks,
    killpg,
    now,
    submit,
    write_json,
)
from campaignops.backends.local.machine import EXECUTOR, Directives, fold, parse_directives
from campaignops.backends.local.state import jobs, view
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import TASK_INDEX
from campaignops.model.states import FINISHED
from campaignops.remote.boxexec import become_subreaper, group_rss, reap_adopted, reap_orphans

TICK_S = 0.1  # how often the executor looks at its tasks (a few syscalls; not a scheduler)
MEM_TICK_S = 1.0  # how often a task's memory is read (a /proc walk)
DEPENDENCY_TICK_S = 0.25
FINAL_REAP_S = 1.0
Json = dict[str, Any]


# --- the executor ------------------------------------------------------------------------------


@dataclass
class _Task:
    """One array task while the executor runs it (mutable: it is the executor's bookkeeping)."""

    index: int
    log: Path
    state: str = "PENDING"
    exit_code: int | None = None
    pgid: int | None = None
    started: str | None = None
    ended: str | None = None
    elapsed_s: float | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    t0: float = 0.0
    warned: bool = False
    stop: str | None = None  # TIMEOUT or CANCELLED once TERM went out
    term_at: float = 0.0
    killed: bool = False
    mem_checked: float = 0.0

    def public(self) -> Json:
        keys = ("index", "state", "exit_code", "pgid", "started", "ended", "elapsed_s")
        return {k: getattr(self, k) for k in keys} | {"log": str(self.log)}


@dataclass
class _Executor:
    root: Path
    job_id: str
    d: Directives
    tasks: list[_Task]
    cancel_signalled: bool = False
    state: str = "PENDING"
    reason: str | None = None
    started: str | None = None
    t0: float | None = None
    last: Json = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.root / self.job_id

    def cancelled(self) -> bool:
        return self.cancel_signalled or (self.dir / "cancel").exists()

    def save(self, **end: Any) -> None:
        data: Json = {"job_id": self.job_id, "state": self.state, "reason": self.reason}
        data |= {"executor_pid": os.getpid(), "started": self.started, "ended": None}
        data |= {"exit_code": None, "elapsed_s": None, "tasks": [t.public() for t in self.tasks]}
        data |= end
        if data != self.last:  # unchanged state is not rewritten every tick
            write_json(self.dir / "state.json", data)
            self.last = data

    def finish(self, reason: str | None = None) -> None:
        self.state, exit_code = fold([(t.state, t.exit_code) for t in self.tasks])
        self.reason = reason
        elapsed = None if self.t0 is None else round(time.time() - self.t0, 3)
        self.save(ended=now(), exit_code=exit_code, elapsed_s=elapsed)

    def parents(self) -> str:
        states = [view(self.root, p)["state"] for p in self.d.after]
        if all(s == "COMPLETED" for s in states):
            return "ok"
        # One parent that ended otherwise than COMPLETED (or is unknown) and afterok can never
        # hold; parents still running are waited for, however many have completed.
        ended_badly = (s != "COMPLETED" and (s in FINISHED or s == "UNKNOWN") for s in states)
        return "never" if any(ended_badly) else "wait"

    def start(self, task: _Task) -> None:
        task.t0, task.started, task.state = time.monotonic(), now(), "RUNNING"
        if self.t0 is None:
            self.t0, self.started, self.state = time.time(), task.started, "RUNNING"
        try:
            task.log.parent.mkdir(parents=True, exist_ok=True)
            with task.log.open("ab") as out:
                task.proc = subprocess.Popen(
                    ["bash", str(self.dir / "script.sh")],
                    env={**os.environ, TASK_INDEX: str(task.index)},
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own group: a limit or cancel hits this task only
                )
        except OSError as exc:
            print(f"task {task.index}: cannot start: {exc}", file=sys.stderr, flush=True)
            task.state, task.ended, task.elapsed_s = "FAILED", now(), 0.0
            return
        task.pgid = task.proc.pid

    def stop(self, task: _Task, why: str) -> None:
        if task.stop is None:
            task.stop, task.term_at = why, time.monotonic()
            killpg(task.pgid, signal.SIGTERM)

    def tick(self, task: _Task) -> bool:
        """Advance one running task; True once it has ended."""
        assert task.proc is not None and task.pgid is not None
        # WNOWAIT leaves the leader a zombie, so its group id cannot be reused while we kill
        # whatever the task left behind in the group.
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        if os.waitid(os.P_PID, task.pgid, flags) is not None:
            killpg(task.pgid, signal.SIGKILL)
            code = task.proc.wait()
            task.exit_code = code if code >= 0 else 128 - code
            task.state = task.stop or ("COMPLETED" if code == 0 else "FAILED")
            task.ended, task.elapsed_s = now(), round(time.monotonic() - task.t0, 3)
            return True
        age = time.monotonic() - task.t0
        limit = self.d.time_s
        if limit is not None and self.d.warning and not task.warned:
            name, before = self.d.warning
            if age >= limit - before:
                task.warned = True
                os.kill(task.pgid, signal.Signals[f"SIG{name}"])  # the batch shell only
        if limit is not None and age >= limit:
            self.stop(task, "TIMEOUT")
        self.police_memory(task)
        if task.stop and not task.killed and time.monotonic() - task.term_at >= self.d.kill_wait_s:
            task.killed = True
            killpg(task.pgid, signal.SIGKILL)
        return False

    def police_memory(self, task: _Task) -> None:
        """Kill a task whose process group holds more resident memory than its limit, at once
        (as Slurm's OverMemoryKill does without cgroups): it ends OUT_OF_MEMORY."""
        cap = self.d.mem_bytes
        if cap is None or task.killed or task.pgid is None:
            return
        clock = time.monotonic()
        if clock - task.mem_checked < MEM_TICK_S:
            return
        task.mem_checked = clock
        if group_rss(task.pgid) > cap:
            task.stop, task.killed = "OUT_OF_MEMORY", True
            print(f"task {task.index}: over its memory limit ({cap} bytes): killed", flush=True)
            killpg(task.pgid, signal.SIGKILL)

    def run(self) -> None:
        self.save()
        verdict = self.parents()
        while verdict == "wait" and not self.cancelled():
            time.sleep(DEPENDENCY_TICK_S)
            verdict = self.parents()
        if verdict == "never" or self.cancelled():
            for task in self.tasks:
                task.state = "CANCELLED"
            self.finish("DependencyNeverSatisfied" if verdict == "never" else "cancelled")
            return
        cap = self.d.cap or os.cpu_count() or 1
        queue: deque[_Task] = deque(self.tasks)
        running: list[_Task] = []
        while queue or running:
            if self.cancelled():
                while queue:
                    queue.popleft().state = "CANCELLED"
                for task in running:
                    self.stop(task, "CANCELLED")
            single = cancelled_tasks(self.dir)  # one small read a tick, none without a request
            for task in [t for t in (*queue, *running) if t.index in single]:
                if task in queue:
                    queue.remove(task)
                    task.state = "CANCELLED"
                else:
                    self.stop(task, "CANCELLED")
            while queue and len(running) < cap:
                task = queue.popleft()
                self.start(task)
                if task.proc is not None:
                    running.append(task)
            running = [t for t in running if not self.tick(t)]
            reap_orphans({t.pgid for t in running if t.pgid is not None})
            self.save()
            time.sleep(TICK_S)
        reap_adopted(FINAL_REAP_S, TICK_S / 2)
        self.finish("cancelled" if self.cancelled() else None)


def execute(root: Path, job_id: str) -> None:
    executor: _Executor | None = None

    def on_term(signum: int, frame: object) -> None:
        # `kill -TERM -- -PGID` on the job's group, or `cancel`: stop the tasks, then end.
        if executor is not None:
            executor.cancel_signalled = True
        else:
            (root / job_id / "cancel").touch()

    signal.signal(signal.SIGTERM, on_term)
    become_subreaper()
    d = parse_directives((root / job_id / "script.sh").read_text(encoding="utf-8"))
    stem = f"{d.name}-{job_id}"
    logs = Path(d.workdir) / d.log_dir
    names = [f"{stem}_{i}.out" if d.size > 1 else f"{stem}.out" for i in range(d.size)]
    tasks = [_Task(index=i, log=logs / name) for i, name in enumerate(names)]
    executor = _Executor(root=root, job_id=job_id, d=d, tasks=tasks)
    executor.run()


# --- the command line --------------------------------------------------------------------------


def _cmd_submit(args: argparse.Namespace) -> None:
    print(submit(Path(args.state).absolute(), Path(args.script)))


def _cmd_run(args: argparse.Namespace) -> None:
    execute(Path(args.state), args.job_id)


def _cmd_status(args: argparse.Namespace) -> None:
    print(json.dumps({"jobs": [view(Path(args.state), j) for j in args.job_ids]}))


def _cmd_siblings(args: argparse.Namespace) -> None:
    root, names = Path(args.state), set(args.names)
    views, broken = jobs(root)
    # No names: every job (the no_sibling gate matches them to targets itself).
    keep = [
        v
        for v in views
        if (not names or v["name"] in names) and (args.all or v["state"] not in FINISHED)
    ]
    print(json.dumps({"jobs": keep, "skipped": broken}))
    for why in broken:
        print(f"localexec siblings: {why}", file=sys.stderr)


def _cmd_cancel(args: argparse.Namespace) -> None:
    for job_id in args.job_ids:
        cancel(Path(args.state), job_id)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], None], tuple[str, ...]]] = {
    "submit": (_cmd_submit, ("script",)),
    "run": (_cmd_run, ("job_id",)),
    "status": (_cmd_status, ("job_ids*",)),
    "siblings": (_cmd_siblings, ("names*",)),
    "cancel": (_cmd_cancel, ("job_ids+",)),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {EXECUTOR}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (_, positionals) in COMMANDS.items():
        sub = commands.add_parser(name)
        sub.add_argument("--state", required=True, help="the state root, .campaign/local")
        if name == "siblings":
            sub.add_argument("--all", action="store_true", help="finished jobs too")
        for spec in positionals:
            sub.add_argument(spec.rstrip("*+"), nargs=spec[-1] if spec[-1] in "*+" else None)
    args = parser.parse_args(argv)
    try:
        COMMANDS[args.command][0](args)
    except CampaignError as exc:
        print(f"localexec {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
