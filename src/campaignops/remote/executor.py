"""The box executor's loop: runs one job's tasks to their end (docs/runner.md, "The box
executor"), on a GPU box reached over SSH or for a local GPU job, and writes ``state.json``
atomically on every change. Each task attempt runs under ``wrap`` (campaignops.remote.commands),
the leader of its own session, which writes ``receipts/<index>.<attempt>.json`` when the task
ends: the receipt, not the executor, is the record that survives an executor killed meanwhile.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from campaignops.remote.gpus import GPU_POLL_S, query_gpus
from campaignops.remote.jobstate import (
    FINISHED,
    damaged,
    fold,
    load_job,
    parent_of,
    parent_state,
    verdict_of,
)
from campaignops.remote.records import (
    BoxError,
    alive,
    now,
    proc_ticks,
    program,
    read_json,
    write_json,
)
from campaignops.remote.supervision import (
    KILL_WAIT_S,
    afterok,
    become_subreaper,
    cancel_requests,
    fresh_clock,
    police,
    reap,
    reap_adopted,
    reap_orphans,
    spawn,
    stop,
)

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
TICK_S = float(os.environ.get("BOXEXEC_TICK_S", "1.0"))  # job.json's tick_s may say otherwise
FINAL_REAP_S = 1.0  # at the job's end, how long the orphans of its tasks are waited for
TAIL_LINES, TAIL_BYTES = 200, 1 << 18


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
                states.append(parent_state(path, lost_is_final=bool(self.job.get("local"))))
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
        # A local CPU job's executor is never resumed (a lost one reads NODE_FAIL), so its tasks
        # need no receipt: the batch shell leads the task's session, as under sbatch.
        wrap = [] if self.job.get("local") else [*program(), "wrap", str(receipt), "--"]
        try:
            if wrap:
                receipt.parent.mkdir(exist_ok=True)
            t["log_offset"] = log.stat().st_size if log.exists() else 0
            cwd = str(self.job.get("workdir") or self.dir)
            proc = spawn(wrap + self.argv(), log=log, env=env, cwd=cwd)
        except OSError as exc:
            t.update(state="FAILED", start=now(), end=now(), reason=f"cannot start: {exc}")
            return
        self.procs[key] = proc
        # pgid: the attempt's process group, kept after its end (pid is cleared then).
        t.update(fresh_clock(time.time()), state="RUNNING", pid=proc.pid, ticks=proc_ticks(proc.pid),
                 pgid=proc.pid, start=now(), end=None, exit_code=None, gpu=gpu, reason=None)  # fmt: skip
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
        cap = self.job.get("mem_bytes")
        if police(
            t, t["pid"], now=time.time(), limit=self.job.get("time_limit_s") or None,
            warning=(str(warning["signal"]), warning["seconds"]) if warning else None,
            kill_wait=float(self.job.get("kill_wait_s") or KILL_WAIT_S), mem_cap=cap,
        ):  # fmt: skip
            print(f"task {key}: over its memory limit ({cap} bytes): killed", flush=True)
        return None

    def ended(self, key: str, code: int | None) -> None:
        t = self.tasks[key]
        self.procs.pop(key, None)
        receipt = read_json(self.dir / "receipts" / "{}.{}.json".format(key, t["attempts"]))
        if isinstance(receipt, dict) and isinstance(receipt.get("exit_code"), int):
            code = receipt["exit_code"]
        t0 = t.get("t0")
        elapsed = round(time.time() - t0, 3) if isinstance(t0, (int, float)) else None
        t.update(end=now(), exit_code=code, pid=None, ticks=None, elapsed_s=elapsed)
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
        if everything:  # the job's end is then "cancelled" (a cancel after it ended is not)
            self.state["cancelled"] = True
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
        become_subreaper()  # a task's orphans come back here, reaped every tick
        self.state["executor"] = {"pid": os.getpid(), "ticks": proc_ticks(os.getpid())}
        self.state["started"] = self.state.get("started") or now()
        self.resume()
        tick = float(self.job.get("tick_s") or TICK_S)
        while not self.step(launching=True):
            self.save()
            reap_orphans({p.pid for p in self.procs.values()})
            time.sleep(tick)
        reap_adopted(FINAL_REAP_S, tick / 2)
        self.state["ended"] = self.state.get("ended") or now()
        starts = [t["t0"] for t in self.tasks.values() if isinstance(t.get("t0"), (int, float))]
        self.state["elapsed_s"] = round(time.time() - min(starts), 3) if starts else None
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
