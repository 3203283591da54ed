"""Story: a phase that depends on another waits for the parent's tasks on EVERY box.

The same two real sshd boxes and campaign as tests/scenarios/test_ssh.py. Phase a has two tasks
(round-robin: a1 on box1, a2 on box2), phase b one (b1 on box1). Box1's executor cannot see
box2: only `campaign status --refresh`, which asks both boxes, can tell it that a ended on every
box, by writing its verdict there (docs/runner.md "afterok across boxes").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from campaignops.model import ledger
from tests.conftest import git
from tests.scenarios import test_ssh as story

camp = story.camp  # the story's fixtures: the campaign with the two boxes on its page
ssh_log = story.ssh_log
box_state = story.box_state
wait_for = story.wait_for

pytestmark = pytest.mark.ssh

# a2 ends as A2 says: holds until the test creates ~/work/go on box2, or fails at once.
PHASES = """\
backend: generic-ssh
resources: {{time: "00:10:00"}}
phases:
  - name: a
    jobs:
      - {{id: a1, cmd: "true"}}
      - id: a2
        cmd: {a2}
  - name: b
    depends_on: a
    jobs:
      - id: b1
        cmd: mkdir -p "$CAMPAIGN_OUT" && date +%s.%N > "$CAMPAIGN_OUT/b1-ran"
"""
HOLD = "while [ ! -e ~/work/go ]; do sleep 0.1; done"


def submitted(camp: Path, run, ssh_boxes, a2: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    (camp / "manifests/phases.yaml").write_text(PHASES.format(a2=repr(a2)))
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "two phases")
    sub = run("submit", "manifests/phases.yaml", "--stage", "smoke")
    assert sub.code == 0, sub.out + sub.err
    a, b = ledger.read(camp).jobs[-2:]
    assert b.record["after"] == [a.job_id]
    places = {
        j.text("name"): [(p["instance"]["name"], p["indices"]) for p in j.record["placement"]]
        for j in (a, b)
    }
    assert sorted(places.values()) == [[("box1", [0])], [("box1", [0]), ("box2", [1])]]
    # What box1's executor was told: a has a share here and tasks elsewhere.
    told = json.loads((box_dir(ssh_boxes[0], str(b.job_id)) / "job.json").read_text())
    assert told["after"] == [{"job": a.job_id, "here": True, "elsewhere": True}]
    return str(a.job_id), str(b.job_id)


def box_dir(box: Any, job_id: str) -> Path:
    return Path(box.workdir / ".campaignops/jobs" / job_id)


def refreshed(run) -> None:  # type: ignore[no-untyped-def]
    assert run("status", "--refresh").code == 0


def test_a_parent_failed_on_the_other_box_cancels_the_child(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    box1, box2 = ssh_boxes
    a, b = submitted(camp, run, ssh_boxes, "exit 1")
    # Box1's share of a completed: before, that alone started b1 there.
    wait_for("a1 to complete on box1", lambda: box_state(box1, a).get("state") == "COMPLETED")
    wait_for("a2 to fail on box2", lambda: box_state(box2, a).get("state") == "FAILED")
    waiting = wait_for("b1 to wait on box1", lambda: _task(box1, b, "Dependency"))
    assert waiting["attempts"] == 0
    job = story.refreshed_until_finished(run, camp)
    assert (job.job_id, job.state) == (b, "CANCELLED")
    task = box_state(box1, b)["tasks"]["0"]
    assert (task["state"], task["reason"], task["attempts"]) == (
        "CANCELLED",
        "DependencyNeverSatisfied",
        0,
    )
    assert not list(box1.workdir.rglob("b1-ran"))


def test_the_child_runs_only_after_the_parent_completed_on_both_boxes(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, ssh_log: Path
) -> None:
    box1, box2 = ssh_boxes
    a, b = submitted(camp, run, ssh_boxes, HOLD)
    wait_for("a1 to complete on box1", lambda: box_state(box1, a).get("state") == "COMPLETED")
    wait_for("b1 to wait on box1", lambda: _task(box1, b, "Dependency"))
    for _ in range(2):  # refreshes while a2 runs: no verdict, b1 keeps waiting
        start = len(ssh_log.read_text().splitlines())
        refreshed(run)
        calls = ssh_log.read_text().splitlines()[start:]
        assert len(calls) == 2 and all(" status " in c for c in calls), calls
    assert _task(box1, b, "Dependency")["attempts"] == 0
    assert box_state(box2, a)["tasks"]["1"]["state"] == "RUNNING"

    assert box2.ssh("touch ~/work/go").returncode == 0
    wait_for("a2 to complete on box2", lambda: box_state(box2, a).get("state") == "COMPLETED")
    start = len(ssh_log.read_text().splitlines())
    refreshed(run)  # sees a COMPLETED on both boxes: one more call, to box1 only
    calls = ssh_log.read_text().splitlines()[start:]
    assert len(calls) == 3, calls
    verdicts = [c for c in calls if " verdict " in c]
    assert len(verdicts) == 1 and box1.host in verdicts[0] and f"{a}=COMPLETED" in verdicts[0]

    job = story.refreshed_until_finished(run, camp)
    assert (job.job_id, job.state) == (b, "COMPLETED")
    ran = box_state(box1, b)["tasks"]["0"]
    assert ran["attempts"] == 1
    assert ran["start"] >= box_state(box2, a)["tasks"]["1"]["end"]
    assert len(list(box1.workdir.rglob("b1-ran"))) == 1


def _task(box: Any, job_id: str, reason: str) -> dict[str, Any] | None:
    task = box_state(box, job_id).get("tasks", {}).get("0")
    return task if task and task["state"] == "PENDING" and task["reason"] == reason else None


# The other way round: a has one task (box1), b two (box1, box2); box2 holds no share of a.
FAN_OUT = """\
backend: generic-ssh
resources: {time: "00:10:00"}
phases:
  - name: a
    jobs: [{id: a1, cmd: "true"}]
  - name: b
    depends_on: a
    jobs:
      - {id: b1, cmd: 'mkdir -p "$CAMPAIGN_OUT" && touch "$CAMPAIGN_OUT/b1-ran"'}
      - {id: b2, cmd: 'mkdir -p "$CAMPAIGN_OUT" && touch "$CAMPAIGN_OUT/b2-ran"'}
"""


def test_a_box_without_a_share_of_the_parent_waits_for_its_verdict(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    # Before: box2 found no directory of a, took a for lost, and cancelled b2 at once.
    box1, box2 = ssh_boxes
    (camp / "manifests/fan.yaml").write_text(FAN_OUT)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "one parent task, two children")
    assert run("submit", "manifests/fan.yaml", "--stage", "smoke").code == 0
    a, b = (str(j.job_id) for j in ledger.read(camp).jobs[-2:])
    told = json.loads((box_dir(box2, b) / "job.json").read_text())
    assert told["after"] == [{"job": a, "here": False, "elsewhere": True}]
    job = story.refreshed_until_finished(run, camp)
    assert (job.job_id, job.state) == (b, "COMPLETED")
    assert [p.name for p in box2.workdir.rglob("*-ran")] == ["b2-ran"]
    assert [p.name for p in box1.workdir.rglob("*-ran")] == ["b1-ran"]
