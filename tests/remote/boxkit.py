"""A box on this machine for the box executor's tests: a jobs root, a deploy directory, and
``nvidia-smi`` replaying a recording (tests/fakes/nvidia_smi_replay.py) at the front of PATH.

The executor runs as it does on a rented box: ``python3 boxexec-<hash>.pyz CMD …`` (the zip the ssh
backend places, campaignops.remote.artifact) as a subprocess, on
real bash tasks; only the GPU query is a replay, because no GPU is here.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from campaignops.remote import artifact
from campaignops.remote.records import alive
from campaignops.remote.supervision import killpg


def placed(data: bytes) -> Path:
    """The executor's zip in the temporary directory, by its content as on a box: written once
    (atomically: xdist workers may race), never over an existing one."""
    path = Path(tempfile.gettempdir()) / f"boxexec-{hashlib.sha256(data).hexdigest()[:12]}.pyz"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


BOXEXEC = placed(artifact.build())
TESTS = Path(__file__).resolve().parent.parent
RECORDINGS = TESTS / "data" / "nvidia-smi"
REPLAY = TESTS / "fakes" / "nvidia_smi_replay.py"
FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED")
WAIT_S = 30.0  # generous: two cores shared by many test runs


class Box:
    def __init__(self, tmp: Path, recording: str | None = "p100x4-idle.csv") -> None:
        self.tmp, self.root, self.deploy = tmp, tmp / "jobs", tmp / "deploy"
        self.root.mkdir()
        self.deploy.mkdir()
        fakebin = tmp / "fakebin"
        fakebin.mkdir()
        if recording is not None:
            (fakebin / "nvidia-smi").symlink_to(REPLAY)
        self.gpu_state = tmp / "nvsmi-state.json"
        self.calls = tmp / "nvsmi-calls"
        # Without the recording, nvidia-smi is absent: PATH holds no other (no GPU here).
        self.env = {
            **os.environ,
            "PATH": f"{fakebin}:{os.environ['PATH']}",
            "NVSMI_REPLAY": str(RECORDINGS / (recording or "none")),
            "NVSMI_REPLAY_STATE": str(self.gpu_state),
            "NVSMI_REPLAY_CALLS": str(self.calls),
            "BOXEXEC_TICK_S": "0.05",
            "BOXEXEC_GPU_POLL_S": "0.1",
            "BOXEXEC_DETACH": "setsid",
            "BOXEXEC_TMUX_SOCKET": f"campaignops-test-{os.getpid()}-{tmp.name}",
        }

    def set_gpus(self, **state: Any) -> None:
        tmp = self.gpu_state.with_suffix(".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        tmp.replace(self.gpu_state)

    def job(self, job_id: str, tasks: Mapping[int, str], **fields: Any) -> Path:
        """A job directory as the ssh backend writes it: ``script.sh`` runs the bash of the
        task ``$CAMPAIGN_TASK_INDEX`` from the deploy directory; ``job.json`` with ``fields``."""
        jobdir = self.root / job_id
        jobdir.mkdir()
        cases = "".join(f"  {i})\n{body}\n    ;;\n" for i, body in tasks.items())
        script = f'cd {self.deploy}\ncase "$CAMPAIGN_TASK_INDEX" in\n{cases}esac\n'
        (jobdir / "script.sh").write_text(script, encoding="utf-8")
        job = {
            "job_id": job_id, "name": "demo", "comment": "", "indices": sorted(tasks),
            "max_parallel": None, "time_limit_s": None, "kill_wait_s": 1, "warning": None,
            "after": [], "gpus": None, "gpu_free_threshold_mib": 500, "oom_retry": None,
            "conda": None, "log_dir": "logs", "log_name": f"demo-{job_id}_{{index}}.out",
            "workdir": str(self.deploy), "submitted": "2026-11-24T10:00:00+00:00",
        }  # fmt: skip
        job.update(fields)
        (jobdir / "job.json").write_text(json.dumps(job), encoding="utf-8")
        return jobdir

    def call(self, *args: str, python: str = sys.executable) -> Any:
        out = subprocess.run(
            [python, str(BOXEXEC), *args], env=self.env, capture_output=True, text=True,
            check=False, timeout=WAIT_S,
        )  # fmt: skip
        assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
        return json.loads(out.stdout)

    def start(self, job_id: str) -> Any:
        return self.call("start", str(self.root / job_id))

    def status(self, *job_ids: str) -> Any:
        return self.call("status", str(self.root), *job_ids)

    def job_view(self, job_id: str) -> Any:
        return self.status(job_id)["jobs"][job_id]

    def until(self, job_id: str, done: Callable[[Any], bool], what: str) -> Any:
        """Poll the status until ``done(job view)``; fail with the last view after WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        while True:
            view = self.job_view(job_id)
            if done(view):
                return view
            assert time.monotonic() < deadline, f"{job_id}: never {what}: {view}"
            time.sleep(0.1)  # each look is a python process: leave the cores to the tasks

    def finished(self, job_id: str) -> Any:
        view = self.until(job_id, lambda v: v["state"] in FINISHED, "finished")
        # The executor writes the job's end, then exits: wait for that too.
        return self.until(job_id, lambda v: not v["executor_alive"], "exited") if view else view

    def log(self, job_id: str, index: int) -> str:
        path = self.deploy / "logs" / f"demo-{job_id}_{index}.out"
        return path.read_text(encoding="utf-8")

    def marks(self, name: str) -> list[str]:
        """Lines the tasks appended to ``deploy/<name>`` (what ran, how often)."""
        path = self.deploy / name
        return path.read_text(encoding="utf-8").split() if path.exists() else []

    def stop_everything(self) -> None:
        """Kill what the tests left running: each job's executor and task process groups that
        its state file records and that are still the same processes. A cancel request goes
        first: an executor still waiting for the lock would otherwise resume the killed tasks."""
        for jobdir in self.root.iterdir():
            if jobdir.is_dir():
                (jobdir / "cancel").touch()
        for state_file in self.root.glob("*/state.json"):
            state = json.loads(state_file.read_text(encoding="utf-8"))
            records = [state.get("executor"), *state.get("tasks", {}).values()]
            for record in records:
                if alive(record):
                    killpg(record["pid"], signal.SIGKILL)
        tmux = ["tmux", "-L", self.env["BOXEXEC_TMUX_SOCKET"], "kill-server"]
        subprocess.run(tmux, capture_output=True, check=False)

    def state(self, job_id: str) -> Any:
        return json.loads((self.root / job_id / "state.json").read_text(encoding="utf-8"))
