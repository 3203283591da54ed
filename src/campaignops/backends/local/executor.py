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

This module is the executor (``run``: the task loop over these files) and the command line;
``submit`` and ``cancel`` are in campaignops.backends.local.jobfiles, the readers behind ``status`` and
``siblings`` in campaignops.backends.local.state. The rules each task runs under (its own
session, the time limit and warning, TERM then KILL, the memory limit, cancel requests, afterok,
reaping) are the one supervisor's, in campaignops.remote.supervision, which also runs box and local
GPU jobs: this executor keeps only the local job's files and its task bookkeeping.

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

from campaignops.backends.local.jobfiles import cancel, now, submit, write_json
from campaignops.backends.local.machine import EXECUTOR, Directives, fold, parse_directives
from campaignops.backends.local.state import jobs, view
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import TASK_INDEX
from campaignops.model.states import FINISHED
from campaignops.remote.supervision import (
    afterok,
    become_subreaper,
    cancel_requests,
    fresh_clock,
    police,
    reap,
    reap_adopted,
    reap_orphans,
    request_cancel,
    spawn,
    stop,
)

TICK_S = 0.1  # how often the executor looks at its tasks (a few syscalls; not a scheduler)
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
    # The supervisor's clock (campaignops.remote.supervision.fresh_clock), on time.monotonic().
    clock: dict[str, Any] = field(default_factory=lambda: fresh_clock(0.0))

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

    def requests(self) -> tuple[bool, set[int]]:
        """Whether the whole job is to stop (a TERM, or ``cancel``), and which tasks alone."""
        everything, some = cancel_requests(self.dir)
        single = {int(k) for k in some if k.isascii() and k.isdigit()}
        return self.cancel_signalled or everything, single

    def cancelled(self) -> bool:
        return self.requests()[0]

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
        return afterok((view(self.root, p)["state"] for p in self.d.after), FINISHED)

    def start(self, task: _Task) -> None:
        task.clock, task.started, task.state = fresh_clock(time.monotonic()), now(), "RUNNING"
        if self.t0 is None:
            self.t0, self.started, self.state = time.time(), task.started, "RUNNING"
        env = {**os.environ, TASK_INDEX: str(task.index)}
        try:
            task.proc = spawn(["bash", str(self.dir / "script.sh")], log=task.log, env=env)
        except OSError as exc:
            print(f"task {task.index}: cannot start: {exc}", file=sys.stderr, flush=True)
            task.state, task.ended, task.elapsed_s = "FAILED", now(), 0.0
            return
        task.pgid = task.proc.pid

    def tick(self, task: _Task) -> bool:
        """Advance one running task under the supervisor's rules; True once it has ended."""
        assert task.proc is not None and task.pgid is not None
        code = reap(task.proc)
        if code is not None:
            task.exit_code = code
            task.state = task.clock["stop"] or ("COMPLETED" if code == 0 else "FAILED")
            task.ended, task.elapsed_s = now(), round(time.monotonic() - task.clock["t0"], 3)
            return True
        d = self.d
        if police(
            task.clock, task.pgid, now=time.monotonic(), limit=d.time_s, warning=d.warning,
            kill_wait=d.kill_wait_s, mem_cap=d.mem_bytes,
        ):  # fmt: skip
            print(
                f"task {task.index}: over its memory limit ({d.mem_bytes} bytes): killed",
                flush=True,
            )
        return False

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
            everything, single = self.requests()  # small reads a tick, none without a request
            if everything:
                while queue:
                    queue.popleft().state = "CANCELLED"
                for task in running:
                    stop(task.clock, task.pgid, "CANCELLED", time.monotonic())
            for task in [t for t in (*queue, *running) if t.index in single]:
                if task in queue:
                    queue.remove(task)
                    task.state = "CANCELLED"
                else:
                    stop(task.clock, task.pgid, "CANCELLED", time.monotonic())
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
            request_cancel(root / job_id)

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
