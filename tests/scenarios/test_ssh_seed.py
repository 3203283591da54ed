"""Story: the remote-gpu-trainer seed's workflow on two GPU boxes (issue 19, gaps 1 and 2).

The same two real sshd boxes and campaign as tests/scenarios/test_ssh.py. A teacher phase
writes a checkpoint, a student phase reads it; the student has a bug, fixed in a new commit,
and `campaign submit --failed` runs it again: in the fix commit's deploy directory, where it
must still find the teacher's checkpoint (the campaign's durable output root on the box). A box
task that runs out of GPU memory is diagnosed from its own log, brought home by the refresh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests.conftest import git
from tests.scenarios import test_ssh as story

camp = story.camp  # the story's fixtures: the campaign with the two boxes on its page
ssh_log = story.ssh_log
wait_for = story.wait_for

pytestmark = pytest.mark.ssh

CKPT = "$CAMPAIGN_OUT/checkpoints/teacher.pt"
CHAIN = """\
backend: generic-ssh
resources: {time: "00:10:00"}
phases:
  - name: teachers
    jobs:
      - id: teacher
        cmd: |
          mkdir -p "$CAMPAIGN_OUT/checkpoints"
          echo weights > "CKPT"
        output: ${CAMPAIGN_OUT}/checkpoints/teacher.pt
  - name: students
    depends_on: teachers
    jobs:
      - id: student
        cmd: |
          test -s "CKPT" || { echo "teacher missing CKPT"; exit 1; }
          STUDENT
        output: ${CAMPAIGN_OUT}/student.json
""".replace("CKPT", CKPT)
BUG = 'echo "IndexError: the student has a bug"; exit 3'
FIX = 'cp "CKPT" "$CAMPAIGN_OUT/student.json"'.replace("CKPT", CKPT)

OOM = """\
backend: generic-ssh
resources: {time: "00:10:00"}
jobs:
  - id: train
    cmd: |
      echo "epoch 1 of 3"
      seq 1 300
      echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2
      exit 1
    output: ${CAMPAIGN_OUT}/train.pt
"""


def refreshed_until(run, root: Path, count: int) -> list[ledger.Job]:  # type: ignore[no-untyped-def]
    """The last ``count`` jobs once each has ended (refreshing meanwhile)."""

    def done() -> list[ledger.Job] | None:
        assert run("status", "--refresh").code == 0
        jobs = ledger.read(root).jobs[-count:]
        return jobs if all(j.state in story.FINISHED for j in jobs) else None

    found: list[ledger.Job] = wait_for(f"the last {count} job(s) to end", done)
    return found


def committed(root: Path, rel: str, text: str, message: str) -> None:
    (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def test_a_student_resubmitted_after_a_fix_commit_finds_its_teacher(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    committed(camp, "manifests/chain.yaml", CHAIN.replace("STUDENT", BUG), "teacher, student")
    sub = run("submit", "manifests/chain.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.out + sub.err
    teacher, student = refreshed_until(run, camp, 2)
    assert (teacher.state, student.state) == ("COMPLETED", "FAILED"), student.record

    committed(camp, "manifests/chain.yaml", CHAIN.replace("STUDENT", FIX), "fix the student")
    again = run("submit", "manifests/chain.yaml", "--stage", "smoke", "--failed")
    assert again.code == 0, again.out + again.err
    (fixed,) = refreshed_until(run, camp, 1)
    assert fixed.text("name") == student.text("name")
    # Run in the fix commit's tree, not the teacher's, and still found the teacher's weights.
    (place,) = fixed.record["placement"]
    assert place["commit"] != teacher.record["placement"][0]["commit"]
    log = camp / f"logs/{fixed.text('name')}-{fixed.job_id}.out"  # brought home (gap 2)
    assert fixed.state == "COMPLETED", log.read_text() if log.exists() else fixed.record
    box = next(b for b in ssh_boxes if b.name == place["instance"]["name"])
    assert (box.workdir / "boxes/runs/smoke/student.json").read_text() == "weights\n"

    # Pull brings both home, each through its own commit's tree, verified as before (a pull
    # of every job: test_a_pull_of_every_job_takes_the_newer_attempt_of_a_resubmitted_cell).
    for job in (teacher, fixed):
        pulled = run("pull", str(job.job_id), "--format", "json")
        assert pulled.code == 0, pulled.out + pulled.err
        cells = json.loads(pulled.out)["cells"]
        assert [(c["target"], c["verdict"]) for c in cells] == [(job.targets[0], "verified")]
    assert (camp / "runs/smoke/checkpoints/teacher.pt").read_text() == "weights\n"
    assert (camp / "runs/smoke/student.json").read_text() == "weights\n"


def test_a_failed_box_task_is_diagnosed_from_its_own_log(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    committed(camp, "manifests/oom.yaml", OOM, "a task that runs out of GPU memory")
    assert run("submit", "manifests/oom.yaml", "--stage", "smoke").code == 0
    (job,) = refreshed_until(run, camp, 1)
    task = job.task("train")
    assert task is not None and task.state == "FAILED"
    assert (task.category, task.entry) == ("oom-gpu", "cuda-oom")
    # The refresh that saw it end brought its log's tail home, where every backend's log is.
    log = camp / f"logs/{job.text('name')}-{job.job_id}.out"
    tail = log.read_text().splitlines()  # its tail: the last 200 lines
    assert len(tail) == 200 and "CUDA out of memory" in tail[-1] and "epoch 1 of 3" not in tail
    assert job.text("signature") == "cuda-oom"
    told = run("diagnose", str(job.job_id), "--format", "json")
    assert told.code == 0, told.err
    doc = json.loads(told.out)
    assert (doc["category"], doc["entry"]) == ("oom-gpu", "cuda-oom")
    # campaign pull brings the whole log over the tail (the task's output is missing: exit 1).
    pulled = run("pull", str(job.job_id))
    assert pulled.code == 1 and "train on box1: missing" in pulled.out, pulled.out
    whole = log.read_text().splitlines()
    assert len(whole) == 302 and whole[0] == "epoch 1 of 3"


def test_a_pull_of_every_job_takes_the_newer_attempt_of_a_resubmitted_cell(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    """After `submit --failed` ran the student again, the old failed job and the new one both
    list its cell: a pull of every job judges the newer attempt alone (verified), never calls
    the cell a duplicate, and the older attempt does not hold the box."""
    committed(camp, "manifests/chain.yaml", CHAIN.replace("STUDENT", BUG), "teacher, student")
    assert run("submit", "manifests/chain.yaml", "--stage", "smoke").code == 0
    teacher, student = refreshed_until(run, camp, 2)
    assert student.state == "FAILED", student.record
    committed(camp, "manifests/chain.yaml", CHAIN.replace("STUDENT", FIX), "fix the student")
    assert run("submit", "manifests/chain.yaml", "--stage", "smoke", "--failed").code == 0
    (fixed,) = refreshed_until(run, camp, 1)
    assert fixed.state == "COMPLETED", fixed.record

    pulled = run("pull", "--format", "json")
    assert pulled.code == 0, pulled.out + pulled.err
    cells = json.loads(pulled.out)["cells"]
    shown = sorted((c["job"], c["target"], c["verdict"]) for c in cells)
    assert shown == sorted(
        [(teacher.job_id, "teacher", "verified"), (fixed.job_id, "student", "verified")]
    ), cells
    assert (camp / "runs/smoke/student.json").read_text() == "weights\n"
    # The old attempt's cell is neither judged nor in the way of letting the boxes go.
    old = next(j for j in ledger.read(camp).jobs if j.ledger_id == student.ledger_id)
    assert "pulled" not in (old.record.get("tasks") or {}).get("0", {}), old.record
    for box in {c["instance"] for c in cells}:
        let_go = run("release", box, "--dry-run")
        assert let_go.code == 0, let_go.out + let_go.err
