"""The box executor's commands: the ssh backend runs one per call (docs/runner.md, "The box
executor"). Every command prints one JSON document.

``start JOBDIR`` detaches ``run JOBDIR`` (tmux, else a new session) unless an executor holds
``JOBDIR/executor.lock``; ``run`` is the loop (campaignops.remote.executor); ``status ROOT
[JOB…]`` answers for every job of an instance at once; ``cancel JOBDIR [--tasks 1,4]``;
``outputs JOBDIR``; ``verdict ROOT JOB=STATE…`` (afterok across boxes); ``tails ROOT JOB=1,4…``
(the ended tasks' log tails that ``status --refresh`` brings home); ``wrap RECEIPT -- ARGV…``
(one task attempt, which writes its receipt). Standard library only, Python 3.8+.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaignops.remote.executor import TAIL_LINES, Executor
from campaignops.remote.gpus import query_gpus
from campaignops.remote.idle import hand_on, watch
from campaignops.remote.jobstate import (
    FINISHED,
    NAME,
    PUBLIC,
    handed,
    lock,
    locked,
    verdict_of,
    verdicts_dir,
)
from campaignops.remote.records import (
    BoxError,
    alive,
    now,
    program,
    read_json,
    write_json,
)
from campaignops.remote.supervision import request_cancel

SESSION = "campaignops-"
TMUX_SOCKET = os.environ.get("BOXEXEC_TMUX_SOCKET", "campaignops")
HOME_TAIL_BYTES = 1 << 16  # a log tail the runner fetches (cmd_tails)
STARTING_S = float(os.environ.get("BOXEXEC_STARTING_S", "60"))


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
    argv = [*program(), "run", str(jobdir)]
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


def cmd_run(jobdir: Path, environ: str | None, lock_fd: int | None = None) -> dict[str, Any]:
    if environ:
        os.environ.clear()
        os.environ.update(read_json(Path(environ)) or {})
    # A handed lock (the local backend's submit took it before writing job.json) is kept as
    # it is: re-locking the file through a new descriptor would wait for ourselves.
    fd = lock_fd if lock_fd is not None and handed(jobdir, lock_fd) else None
    fd = fd if fd is not None else lock(jobdir, patience_s=2.0)
    if fd is None:
        return {"ran": False, "reason": f"another executor holds {jobdir}/executor.lock"}
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    executor = Executor(jobdir)
    if executor.job.get("local"):  # TERM to a local job's executor (its handle) cancels the job
        signal.signal(signal.SIGTERM, lambda signum, frame: request_cancel(jobdir))
    executor.run()
    hand_on(jobdir, executor.job)  # the box's idle stop, when the job carries one
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
    # Imported here: only `outputs` hashes, and hashlib (OpenSSL) is ~3 ms of every start of
    # this executor and of the local one (status, submit, cancel …), which never hash.
    import hashlib

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


def parser() -> argparse.ArgumentParser:
    """The executor's commands (``wrap`` aside: it takes its argv after ``--`` unparsed)."""
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
    text = "an open descriptor of JOBDIR/executor.lock its starter holds locked (handed over)"
    sub.choices["run"].add_argument("--lock-fd", type=int, help=text)
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
    text = "stop this box with the newest job's idle_stop once no job has run a task for that long"
    sub.add_parser("idle", help=text, description=text).add_argument("root")
    text = "stop the job's tasks (or --tasks): TERM, then KILL; tasks not started never start"
    cancel = sub.add_parser("cancel", help=text, description=text)
    cancel.add_argument("jobdir")
    cancel.add_argument("--tasks", help="comma-separated task indices; default: every task")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["wrap"] and "--" in words:  # wrap RECEIPT -- ARGV…: no option parsing
        return cmd_wrap(Path(words[1]), words[words.index("--") + 1 :])
    args = parser().parse_args(argv)
    try:
        if args.command == "status":
            result = cmd_status(Path(args.root), args.jobs)
        elif args.command == "verdict":
            result = cmd_verdict(Path(args.root), args.pairs)
        elif args.command == "tails":
            result = cmd_tails(Path(args.root), args.pairs, args.running)
        elif args.command == "idle":
            result = watch(Path(args.root).absolute())
        else:
            jobdir = Path(args.jobdir).absolute()
            if args.command == "start":
                result = cmd_start(jobdir)
            elif args.command == "run":
                result = cmd_run(jobdir, args.environ, args.lock_fd)
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
