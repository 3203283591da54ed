"""Story: the experiment-queue keys a GPU box runs, through `campaign submit` on a real sshd.

The same two boxes as tests/scenarios/test_ssh.py. A task whose first attempt dies with a CUDA
out-of-memory line (the template catalog's cuda-oom matcher) is retried by the box's executor
after `oom_retry.delay`, and completes; the runner records one job and never resubmits it. The
manifest's GPU list and free threshold reach the box, and the box never auto-starts tmux.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests.conftest import git
from tests.scenarios import test_ssh as story

camp = story.camp  # the campaign with the two boxes on its page
ssh_log = story.ssh_log
pytestmark = pytest.mark.ssh

FLAKY = """\
backend: generic-ssh
max_parallel: 1
resources: {time: "00:10:00"}
oom_retry: {max_attempts: 3, delay: 1}
gpus: [1]
gpu_free_threshold_mib: 800
jobs:
  - id: flaky
    cmd: bash scripts/flaky.sh
    output: ${CAMPAIGN_OUT}/flaky
"""
SCRIPT = """\
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


def test_an_oom_on_the_box_is_retried_there_and_completes(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    (camp / "manifests/flaky.yaml").write_text(FLAKY)
    (camp / "scripts/flaky.sh").write_text(SCRIPT)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a task that runs out of GPU memory once")
    sub = run("submit", "manifests/flaky.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.out + sub.err
    job = story.refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record
    box1 = ssh_boxes[0]
    state = story.box_state(box1, str(job.job_id))
    assert state["tasks"]["0"]["attempts"] == 2 and state["tasks"]["0"]["state"] == "COMPLETED"
    doc = json.loads(
        (box1.workdir / ".campaignops/jobs" / str(job.job_id) / "job.json").read_text()
    )
    assert doc["gpus"] == [1] and doc["gpu_free_threshold_mib"] == 800
    assert doc["oom_retry"]["max_attempts"] == 3 and doc["oom_retry"]["delay_s"] == 1
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert any(re.search(p, line) for p in doc["oom_retry"]["patterns"])  # the catalog's
    deploy = Path(job.record["placement"][0]["dir"])
    assert (deploy / "runs/smoke/flaky").read_text() == "gpu 1\n"
    # The runner saw one job, COMPLETED: nothing for its own oom_retry to resubmit.
    assert run("status", "--refresh").code == 0
    assert [j.job_id for j in ledger.read(camp).jobs if j.job_id] == [job.job_id]
    assert box1.ssh("test -e ~/.no_auto_tmux").returncode == 0


def test_each_attempt_of_a_box_oom_retry_is_in_the_ledger_and_the_report(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    """The executor's retry is recorded as a scheduler retry's would be: the first attempt
    ended FAILED, diagnosed oom-gpu, the second completed; `campaign report` counts the target
    OOM-retried then completed, and `audit resources` counts both attempts."""
    (camp / "manifests/flaky.yaml").write_text(FLAKY.replace("max_attempts: 3", "max_attempts: 2"))
    (camp / "scripts/flaky.sh").write_text(SCRIPT)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a task that runs out of GPU memory once")
    assert run("submit", "manifests/flaky.yaml", "--stage", "smoke").code == 0
    job = story.refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record
    report = run("report", "--format", "json")
    assert report.code == 0, report.out + report.err
    doc = json.loads(report.out)
    (target,) = doc["groups"][0]["targets"]
    assert (target["outcome"], target["attempts"]) == ("oom-retried", 2), target
    assert doc["counts"]["oom-retried"] == 1 and doc["counts"]["completed"] == 0, doc
    shown = [(a["attempt"], a["state"]) for a in doc["groups"][0]["attempts"]]
    assert shown == [(1, "FAILED"), (2, "COMPLETED")], shown
    # The ledger holds both attempts: the first in the task's tries, FAILED, oom-gpu.
    task = job.task("flaky")
    assert task is not None and task.attempt == 2, job.record
    (first,) = task.tries
    assert (first.attempt, first.state, first.category) == (1, "FAILED", "oom-gpu"), first
    assert first.reason == "oom: attempt 1 of 2; retried" and first.exit_code == 1
    assert first.started and first.ended and first.run_time_s is not None
    audit = run("audit", "resources", "--format", "json")
    assert audit.code == 0, audit.out + audit.err
    assert '"oom-gpu"' in audit.out, audit.out
    told = run("diagnose", str(job.job_id))
    assert told.code == 0, told.err
    assert "attempt   1: FAILED, exit 1, oom: attempt 1 of 2; retried; oom-gpu" in told.out
    doc = json.loads(run("diagnose", str(job.job_id), "--format", "json").out)
    assert [t["diagnosis"]["category"] for t in doc["tries"]] == ["oom-gpu"], doc
