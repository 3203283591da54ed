"""Story: a workstation with GPUs runs the experiment-queue semantics on the local backend.

A manifest with a GPU list (``gpus: [0, 1]``) on the local backend runs under the box executor
on this machine, with no ssh: one task per GPU (its own ``CUDA_VISIBLE_DEVICES``), a GPU free
only below ``gpu_free_threshold_mib``, a CUDA out-of-memory line retried by the executor. Through
the CLI in-process, with real git, real detached executors and real bash. The GPU queries come
from the ``nvidia-smi`` stand-in replaying recorded real output (tests/fakes/nvidia_smi_replay.py,
recording p100x4-idle.csv); a test raises a GPU's memory.used through its state file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.local import gpu as localbox
from campaignops.model import ledger
from tests import waiting
from tests.conftest import git

TESTS = Path(__file__).resolve().parent.parent
REPLAY = TESTS / "fakes" / "nvidia_smi_replay.py"
RECORDING = TESTS / "data" / "nvidia-smi" / "p100x4-idle.csv"  # four idle P100s, 103 MiB used

# Two targets, one array: each waits (bounded) until both have started, so they ran at once.
PAIR = """\
backend: local
gpus: [0, 1]
resources: {time: "00:05:00"}
jobs:
  - id: a
    cmd: bash scripts/gpu.v1.sh a
    output: ${CAMPAIGN_OUT}/a
  - id: b
    cmd: bash scripts/gpu.v1.sh b
    output: ${CAMPAIGN_OUT}/b
"""
GPU_SH = """\
#!/usr/bin/env bash
set -euo pipefail
mkdir -p "$CAMPAIGN_OUT"
touch "$CAMPAIGN_OUT/started-$1"
for _ in $(seq 200); do
  [ "$(ls "$CAMPAIGN_OUT" | grep -c '^started-')" -ge 2 ] && break
  sleep 0.1
done
echo "$CUDA_VISIBLE_DEVICES" > "$CAMPAIGN_OUT/$1"
"""
FLAKY = """\
backend: local
gpus: [1]
oom_retry: {max_attempts: 3, delay: 1}
gpu_free_threshold_mib: 800
resources: {time: "00:05:00"}
jobs:
  - id: flaky
    cmd: bash scripts/flaky.v1.sh
    output: ${CAMPAIGN_OUT}/flaky
"""
FLAKY_SH = """\
#!/usr/bin/env bash
# Runs out of GPU memory on its first attempt only (a marker file remembers it).
set -euo pipefail
mkdir -p "$CAMPAIGN_OUT"
if [ ! -e "$CAMPAIGN_OUT/tried" ]; then
  touch "$CAMPAIGN_OUT/tried"
  echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2
  exit 1
fi
echo "gpu $CUDA_VISIBLE_DEVICES" > "$CAMPAIGN_OUT/flaky"
"""
NAP = """\
backend: local
gpus: [0]
resources: {time: "00:05:00"}
jobs:
  - id: nap
    cmd: bash -c 'echo napping on $CUDA_VISIBLE_DEVICES; sleep 120'
"""


@pytest.fixture
def camp(tmp_path: Path, new_campaign: Callable[..., Path], monkeypatch) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    fakebin = tmp_path / "fakebin"
    fakebin.mkdir()
    (fakebin / "nvidia-smi").symlink_to(REPLAY)
    monkeypatch.setenv("PATH", f"{fakebin}:{os.environ['PATH']}")
    monkeypatch.setenv("NVSMI_REPLAY", str(RECORDING))
    monkeypatch.setenv("NVSMI_REPLAY_STATE", str(tmp_path / "nvsmi-state.json"))
    monkeypatch.setenv("BOXEXEC_TICK_S", "0.05")
    monkeypatch.setenv("BOXEXEC_GPU_POLL_S", "0.1")
    root = new_campaign("demo", "require_pushed=no")
    for rel, text in {
        "manifests/pair.yaml": PAIR,
        "scripts/gpu.v1.sh": GPU_SH,
        "manifests/flaky.yaml": FLAKY,
        "scripts/flaky.v1.sh": FLAKY_SH,
        "manifests/nap.yaml": NAP,
    }.items():
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "GPU manifests")
    yield root
    # Leave nothing running: every box job still unfinished is cancelled by its executor.
    box = root / ".campaign/local/box"
    for jobdir in box.iterdir() if box.is_dir() else ():
        if localbox.is_box_id(jobdir.name):
            subprocess.run(
                ["python3", str(localbox.EXECUTOR), "cancel", str(jobdir)],
                capture_output=True,
                check=False,
            )


def set_gpus(root: Path, **state: Any) -> None:
    path = root.parent / "nvsmi-state.json"
    path.with_suffix(".tmp").write_text(json.dumps(state))
    path.with_suffix(".tmp").replace(path)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    return waiting.until(what, check, timeout=timeout)


def refreshed(run, root: Path) -> ledger.Job:  # type: ignore[no-untyped-def]
    result = run("status", "--refresh")
    assert result.code == 0, result.out + result.err
    return ledger.read(root).jobs[-1]


def box_state(root: Path, job_id: str) -> dict[str, Any]:
    found = json.loads((root / ".campaign/local/box" / job_id / "state.json").read_text())
    assert isinstance(found, dict)
    return found


def task_field(root: Path, job_id: str, task: str, key: str) -> Any:
    """A task's field in the executor's state.json, or None before the executor has written
    it (submit returns once the executor is started, not once it has written its first state)."""
    if not (root / ".campaign/local/box" / job_id / "state.json").is_file():
        return None
    return box_state(root, job_id)["tasks"].get(task, {}).get(key)


def test_two_tasks_get_a_gpu_each_and_complete(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    sub = run("submit", "manifests/pair.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.out + sub.err
    job = ledger.read(camp).jobs[-1]
    assert localbox.is_box_id(str(job.job_id)), job.record
    script = (camp / ".campaign/local/box" / str(job.job_id) / "script.sh").read_text()
    assert '#LOCALBOX --box={"costs":[1.0,1.0],"gpus":[0,1]}' in script.splitlines()
    done = wait_for("COMPLETED", lambda: (j := refreshed(run, camp)).state == "COMPLETED" and j)
    assert (done.state, done.exit_code) == ("COMPLETED", 0)
    assert {t: done.task(t).state for t in ("a", "b")} == {"a": "COMPLETED", "b": "COMPLETED"}  # type: ignore[union-attr]
    got = {(camp / "runs/smoke" / t).read_text().strip() for t in ("a", "b")}
    assert got == {"0", "1"}  # one GPU each, at the same time
    tasks = box_state(camp, str(job.job_id))["tasks"]
    assert sorted(t["gpu"] for t in tasks.values()) == [0, 1]
    shown = run("status")
    assert shown.code == 0 and str(job.job_id) in shown.out and "COMPLETED" in shown.out


def test_a_busy_gpu_holds_the_task_pending_with_the_reason(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    set_gpus(camp, used={"0": 9000, "1": 9000})  # another user's process on both GPUs
    assert run("submit", "manifests/pair.yaml", "--stage", "smoke").code == 0
    job_id = str(ledger.read(camp).jobs[-1].job_id)
    why = "no GPU below 500 MiB (0: 9000 MiB used; 1: 9000 MiB used)"
    wait_for("the GPU reason", lambda: task_field(camp, job_id, "0", "reason") == why)
    job = refreshed(run, camp)
    assert job.state == "PENDING", job.record
    assert job.task("a").reason == why  # type: ignore[union-attr]
    # The no_sibling gate sees the waiting GPU job: a second submission is refused.
    again = run("submit", "manifests/pair.yaml", "--stage", "smoke")
    assert again.code != 0 and job_id in again.out + again.err, again.out + again.err
    set_gpus(camp, used={"1": 9000})  # GPU 0 comes free: `a` takes it, `b` is held back
    held = "no GPU below 500 MiB (0: held by a task; 1: 9000 MiB used)"
    wait_for("b held", lambda: task_field(camp, job_id, "1", "reason") == held)
    job = refreshed(run, camp)
    assert job.task("a").state == "RUNNING" and job.task("b").reason == held  # type: ignore[union-attr]
    set_gpus(camp)
    done = wait_for("COMPLETED", lambda: (j := refreshed(run, camp)).state == "COMPLETED" and j)
    assert done.state == "COMPLETED"


def test_a_cuda_oom_is_retried_by_the_executor_and_completes(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/flaky.yaml", "--stage", "smoke").code == 0
    done = wait_for("COMPLETED", lambda: (j := refreshed(run, camp)).state == "COMPLETED" and j)
    assert (done.state, done.exit_code) == ("COMPLETED", 0)
    task = box_state(camp, str(done.job_id))["tasks"]["0"]
    assert (task["attempts"], task["gpu"]) == (2, 1)
    assert (camp / "runs/smoke/flaky").read_text() == "gpu 1\n"
    job_doc = json.loads((camp / ".campaign/local/box" / str(done.job_id) / "job.json").read_text())
    assert job_doc["gpu_free_threshold_mib"] == 800 and job_doc["oom_retry"]["max_attempts"] == 3
    # The runner saw one job, COMPLETED: its own oom_retry has nothing to resubmit.
    refreshed(run, camp)
    assert [j.job_id for j in ledger.read(camp).jobs if j.job_id] == [done.job_id]
    # Both attempts are in the ledger (the same executor as a box's): the first ran out of
    # GPU memory, and the report counts the target OOM-retried then completed.
    (first,) = done.task("flaky").tries  # type: ignore[union-attr]
    assert (first.attempt, first.state, first.category) == (1, "FAILED", "oom-gpu")
    report = json.loads(run("report", "--format", "json").out)
    assert report["counts"]["oom-retried"] == 1, report


def test_cancel_stops_a_running_gpu_task(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/nap.yaml", "--stage", "smoke").code == 0
    job_id = str(ledger.read(camp).jobs[-1].job_id)
    wait_for("RUNNING", lambda: refreshed(run, camp).state == "RUNNING")
    done = run("cancel", job_id, "--reason", "not needed")
    assert done.code == 0, done.out + done.err
    job = wait_for("CANCELLED", lambda: (j := refreshed(run, camp)).state == "CANCELLED" and j)
    assert job.state == "CANCELLED"
    assert box_state(camp, job_id)["tasks"]["0"]["state"] == "CANCELLED"


COUNTED = """\
backend: local
gpus: 1
conda_hook: /nonexistent/conda.sh
resources: {time: "00:05:00"}
jobs:
  - id: counted
    cmd: mkdir -p "$CAMPAIGN_OUT" && echo "${CUDA_VISIBLE_DEVICES:-none}" > "$CAMPAIGN_OUT/counted"
    output: ${CAMPAIGN_OUT}/counted
"""


def test_the_local_page_lists_the_gpus_a_counted_manifest_gets(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/counted.yaml").write_text(
        COUNTED.replace("conda_hook: /nonexistent/conda.sh\n", "")
    )
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a manifest that counts its GPUs")
    # Without a GPU list on the page, a count is a plain local job (localexec).
    assert run("submit", "manifests/counted.yaml", "--stage", "smoke").code == 0
    plain = wait_for("done", lambda: (j := refreshed(run, camp)).state == "COMPLETED" and j)
    assert not localbox.is_box_id(str(plain.job_id))
    assert (camp / "runs/smoke/counted").read_text() == "none\n"
    page = camp / "backends/local.md"
    page.write_text(page.read_text().replace("kind: local\n", "kind: local\ngpus: [2, 3]\n", 1))
    (camp / "manifests/counted.yaml").write_text(COUNTED)
    # The smoke above ran the manifest before conda_hook: STATUS.md now says it ran an older
    # config, and the committed view is rebuilt with the change (docs/decisions.md, 1xx).
    assert run("render").code == 0
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "this workstation's GPUs are 2 and 3")
    checked = run("check")
    assert checked.code == 0, checked.out + checked.err  # the page's list and conda_hook pass
    sub = run("submit", "manifests/counted.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.out + sub.err
    job = ledger.read(camp).jobs[-1]
    assert localbox.is_box_id(str(job.job_id))
    doc = json.loads((camp / ".campaign/local/box" / str(job.job_id) / "job.json").read_text())
    assert doc["gpus"] == [2, 3] and doc["conda"] is None  # a hook alone activates nothing
    wait_for("COMPLETED", lambda: refreshed(run, camp).state == "COMPLETED")
    assert (camp / "runs/smoke/counted").read_text() == "2\n"


BROKEN = """\
backend: local
gpus: [0]
resources: {time: "00:05:00"}
jobs:
  - id: broken
    cmd: 'echo "RuntimeError: CUDA error: out of memory" >&2; exit 1'
"""


def test_diagnose_reads_a_failed_gpu_tasks_log(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/broken.yaml").write_text(BROKEN)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a task that fails with a CUDA OOM, no retry")
    assert run("submit", "manifests/broken.yaml", "--stage", "smoke").code == 0
    job = wait_for("FAILED", lambda: (j := refreshed(run, camp)).state == "FAILED" and j)
    found = run("diagnose", str(job.job_id), "--format", "json")
    doc = json.loads(found.out)
    assert (doc["category"], doc["entry"]) == ("oom-gpu", "cuda-error-oom"), found.out
    # The log is where the local backend's log_path says (no task index for a single task).
    assert doc["log"] == f"logs/demo.broken.smoke-{job.job_id}.out" and doc["log_read"]
    assert doc["matches"][0]["text"] == "RuntimeError: CUDA error: out of memory"


GATED = """\
backend: local
gpus: [0]
resources: {time: "00:05:00"}
jobs:
  - id: gated
    cmd: >-
      mkdir -p "$CAMPAIGN_OUT" && echo started >> "$CAMPAIGN_OUT/runs" &&
      until [ -e gate ]; do sleep 0.1; done && echo done > "$CAMPAIGN_OUT/gated"
    output: ${CAMPAIGN_OUT}/gated
"""


def test_a_killed_executor_is_started_again_and_adopts_its_running_task(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/gated.yaml").write_text(GATED)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a task that waits for a gate file")
    assert run("submit", "manifests/gated.yaml", "--stage", "smoke").code == 0
    job_id = str(ledger.read(camp).jobs[-1].job_id)
    wait_for("RUNNING", lambda: task_field(camp, job_id, "0", "state") == "RUNNING")
    first = box_state(camp, job_id)["executor"]["pid"]
    os.kill(first, signal.SIGKILL)  # a reboot's or an OOM killer's end: no chance to clean up
    wait_for(
        "the executor gone",
        lambda: (
            not Path(f"/proc/{first}").exists()
            or "zombie" in Path(f"/proc/{first}/status").read_text().lower()
        ),
    )
    job = refreshed(run, camp)  # finds no executor: starts one, which adopts the task
    assert job.state == "RUNNING", job.record
    wait_for("a new executor", lambda: box_state(camp, job_id)["executor"]["pid"] != first)
    (camp / "gate").touch()
    done = wait_for("COMPLETED", lambda: (j := refreshed(run, camp)).state == "COMPLETED" and j)
    assert done.state == "COMPLETED"
    assert box_state(camp, job_id)["tasks"]["0"]["attempts"] == 1  # adopted, never run again
    assert (camp / "runs/smoke/runs").read_text() == "started\n"
