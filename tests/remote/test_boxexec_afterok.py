"""afterok across boxes, on one box: a parent with tasks on other boxes is satisfied only by the
runner's verdict (``boxexec verdict ROOT JOB=STATE``), which the executor cannot see for itself.
The executor runs as on a box (subprocesses, real bash tasks)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote.boxkit import BOXEXEC, Box

RAN = 'echo "$CAMPAIGN_TASK_INDEX" >> ran'


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    made = Box(tmp_path, recording=None)
    yield made
    made.stop_everything()


def waiting(box: Box, job_id: str) -> dict[str, object]:
    return box.until(  # type: ignore[no-any-return]
        job_id, lambda v: v["tasks"]["0"]["reason"] == "Dependency", "waiting on its parent"
    )


def test_own_share_completed_is_not_enough_the_verdict_starts_the_child(box: Box) -> None:
    box.job("parent", {0: "touch parent-done"})
    here_and_there = {"job": "parent", "here": True, "elsewhere": True}
    box.job("child", {0: RAN}, after=[here_and_there])
    box.start("parent")
    box.start("child")
    assert box.finished("parent")["state"] == "COMPLETED"
    view = waiting(box, "child")
    assert (view["state"], view["awaits"]) == ("PENDING", ["parent"])
    assert box.marks("ran") == []

    assert box.call("verdict", str(box.root), "parent=COMPLETED") == {
        "verdicts": {"parent": "COMPLETED"}
    }
    child = box.finished("child")
    assert (child["state"], child["awaits"]) == ("COMPLETED", [])
    assert box.marks("ran") == ["0"]


def test_a_parent_failed_elsewhere_cancels_the_child_here(box: Box) -> None:
    box.job("parent", {0: "true"})
    box.job("child", {0: RAN, 1: RAN}, after=[{"job": "parent", "here": True, "elsewhere": True}])
    box.start("parent")
    box.start("child")
    assert box.finished("parent")["state"] == "COMPLETED"
    waiting(box, "child")
    box.call("verdict", str(box.root), "parent=FAILED")
    child = box.finished("child")
    assert child["state"] == "CANCELLED"
    assert {t["reason"] for t in child["tasks"].values()} == {"DependencyNeverSatisfied"}
    assert child["awaits"] == []
    assert box.marks("ran") == []


def test_a_parent_with_no_share_here_is_awaited_not_taken_for_lost(box: Box) -> None:
    # Before: a parent directory missing here read UNKNOWN, and the child was cancelled.
    box.job("child", {0: RAN}, after=[{"job": "parent", "here": False, "elsewhere": True}])
    box.start("child")
    view = waiting(box, "child")
    assert view["awaits"] == ["parent"]
    assert not (box.root / "parent").exists()
    box.call("verdict", str(box.root), "parent=COMPLETED")
    assert box.finished("child")["state"] == "COMPLETED"
    assert box.marks("ran") == ["0"]


def test_a_share_failed_here_cancels_without_waiting_for_the_verdict(box: Box) -> None:
    box.job("parent", {0: "exit 3"})
    box.job("child", {0: RAN}, after=[{"job": "parent", "here": True, "elsewhere": True}])
    box.start("parent")
    box.start("child")
    child = box.finished("child")
    assert (child["state"], child["tasks"]["0"]["reason"]) == (
        "CANCELLED",
        "DependencyNeverSatisfied",
    )
    assert box.marks("ran") == []


def test_a_verdict_is_written_once_and_bad_ones_are_refused(box: Box) -> None:
    assert box.call("verdict", str(box.root), "p=COMPLETED", "q=CANCELLED") == {
        "verdicts": {"p": "COMPLETED", "q": "CANCELLED"}
    }
    # A job's end never changes: a later, different verdict keeps the first one.
    assert box.call("verdict", str(box.root), "p=FAILED") == {"verdicts": {"p": "COMPLETED"}}
    record = json.loads((box.tmp / "verdicts" / "p.json").read_text(encoding="utf-8"))
    assert (record["job_id"], record["state"]) == ("p", "COMPLETED")
    for bad in ("p=RUNNING", "../x=COMPLETED", "p"):
        out = subprocess.run(
            [sys.executable, str(BOXEXEC), "verdict", str(box.root), bad],
            env=box.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 2, (bad, out.stdout)
        assert "not JOB=STATE with a final state" in json.loads(out.stdout)["error"]
    assert sorted(p.name for p in (box.tmp / "verdicts").iterdir()) == ["p.json", "q.json"]


def test_an_after_entry_it_cannot_follow_is_refused_at_start(box: Box) -> None:
    box.job("child", {0: RAN}, after=[{"job": "parent", "here": False, "elsewhere": False}])
    out = subprocess.run(
        [sys.executable, str(BOXEXEC), "start", str(box.root / "child")],
        env=box.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert "job.json: after is" in json.loads(out.stdout)["error"]


def test_one_parent_completed_while_another_runs_is_a_wait_not_a_refusal(box: Box) -> None:
    # Before: the first parent's COMPLETED counted as "ended otherwise" and cancelled the child.
    box.job("first", {0: "true"})
    box.job("second", {0: "while [ ! -e go ]; do sleep 0.05; done"})
    box.job("child", {0: RAN}, after=["first", "second"])
    for job_id in ("first", "second", "child"):
        box.start(job_id)
    assert box.finished("first")["state"] == "COMPLETED"
    assert waiting(box, "child")["state"] == "PENDING"
    (box.deploy / "go").touch()
    assert box.finished("child")["state"] == "COMPLETED"
    assert box.marks("ran") == ["0"]
