"""Story: `campaign cancel` of a task running on a GPU box shows what it was doing.

The same two real sshd boxes and campaign as tests/scenarios/test_ssh.py. A box task's log is on
its box until a refresh sees the task end, so the tail comes with the cancel's own ssh call
(boxlogs, bounded), is shown as a scheduler job's is, and is not written home: the refresh that
sees the task end still brings its final tail.
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
pytestmark = pytest.mark.ssh

TALKER = """\
backend: generic-ssh
resources: {time: "00:10:00"}
jobs:
  - id: talker
    cmd: |
      echo "epoch 1 of 3: loss 2.31"
      sleep 300
    output: ${CAMPAIGN_OUT}/talker.pt
"""


def test_cancel_of_a_running_box_task_shows_its_log_tail(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, ssh_log: Path
) -> None:
    job = talking(camp, run, ssh_boxes)
    home = camp / f"logs/{job.text('name')}-{job.job_id}.out"
    before = len(ssh_log.read_text().splitlines())
    out = run("cancel", str(job.job_id), "--reason", "wrong config")
    assert out.code == 0, out.out + out.err
    assert "epoch 1 of 3: loss 2.31" in out.out and "no log yet" not in out.out, out.out
    assert len(ssh_log.read_text().splitlines()) == before + 1  # the cancel's own call
    assert not home.exists()  # shown, not kept: the refresh brings the final tail
    finished = story.refreshed_until_finished(run, camp)
    assert finished.state == "CANCELLED"
    assert "epoch 1 of 3" in home.read_text()


def talking(camp: Path, run, ssh_boxes) -> ledger.Job:  # type: ignore[no-untyped-def]
    """The talker submitted, once it runs and has written its first line on its box."""
    (camp / "manifests/talker.yaml").write_text(TALKER)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a task that talks, then sleeps")
    assert run("submit", "manifests/talker.yaml", "--stage", "smoke").code == 0
    job = story.newest(camp)
    (place,) = job.record["placement"]
    box = next(b for b in ssh_boxes if b.name == place["instance"]["name"])
    box_log = Path(place["dir"]) / f"logs/{job.text('name')}-{job.job_id}_0.out"

    def said() -> bool:
        task = story.box_state(box, str(job.job_id)).get("tasks", {}).get("0", {})
        return (
            task.get("state") == "RUNNING" and box_log.is_file() and "epoch" in box_log.read_text()
        )

    story.wait_for("the task to run and talk", said)
    return job


def test_cancel_as_json_carries_the_box_task_tail(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    job = talking(camp, run, ssh_boxes)
    out = run("cancel", str(job.job_id), "--format", "json")
    assert out.code == 0, out.out + out.err
    (log,) = json.loads(out.out)["logs"]
    assert log["tail"] == ["epoch 1 of 3: loss 2.31"], log
