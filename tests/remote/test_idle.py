"""A box that stops itself once idle (campaignops.remote.idle), run as on a box: the executor's zip
as subprocesses on job directories under a temp dir, real bash tasks, a stop command that writes
a marker file with the time it ran."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from campaignops.remote import idle
from campaignops.remote.records import alive
from tests import waiting
from tests.remote.boxkit import Box

HOLD = 'while [ ! -e "go-$CAMPAIGN_TASK_INDEX" ]; do sleep 0.05; done'


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    made = Box(tmp_path, recording=None)
    yield made
    made.stop_everything()
    watcher = idle_record(made)
    if alive(watcher):  # a watcher a failed test left counting down
        os.kill(watcher["pid"], signal.SIGKILL)


def idle_record(box: Box) -> dict[str, Any]:
    try:
        return dict(json.loads((box.tmp / idle.RECORD).read_text()))
    except (OSError, ValueError):
        return {}


def stop_setting(box: Box, minutes: float, command: str | None = None) -> dict[str, Any]:
    marker = box.tmp / "stopped"
    return {"minutes": minutes, "command": command or f"date +%s.%N > {marker}"}


def ended(box: Box, job_id: str) -> float:
    """The last end of the job's tasks, as the executor recorded it (whole seconds)."""
    tasks = box.state(job_id)["tasks"].values()
    return max(datetime.fromisoformat(t["end"]).timestamp() for t in tasks)


def test_the_box_stops_itself_after_the_idle_time_and_not_while_a_job_runs(box: Box) -> None:
    minutes = 0.08  # 4.8 s: long enough to start a job meanwhile on a loaded machine
    setting = stop_setting(box, minutes)
    box.job("quick", {0: "true"}, idle_stop=setting, submitted="2026-11-24T10:00:00+00:00")
    box.start("quick")
    box.finished("quick")
    # The quick job's executor handed on to the box's watcher, which counts down.
    waiting.until("the watcher", lambda: idle_record(box).get("state") == "watching", timeout=30)
    # A job arrives before the idle time is up, and holds its task.
    box.job("long", {0: HOLD}, idle_stop=setting, submitted="2026-11-24T10:01:00+00:00")
    box.start("long")
    box.until("long", lambda v: v["tasks"]["0"]["state"] == "RUNNING", "running")
    deadline = ended(box, "quick") + minutes * 60 + 1

    def looked_while_busy() -> bool:
        seen = idle_record(box)
        checked = datetime.fromisoformat(seen.get("checked", "1970-01-01T00:00:00+00:00"))
        return seen.get("state") == "busy" and checked.timestamp() > deadline

    waiting.until("the watcher to look after the idle time, the job running", looked_while_busy)
    assert not (box.tmp / "stopped").exists()  # not while a task runs
    (box.deploy / "go-0").touch()
    box.finished("long")
    marker = waiting.until(
        "the stop", lambda: (box.tmp / "stopped").exists() and (box.tmp / "stopped"), timeout=30
    )
    ran_at = float(marker.read_text())
    assert ran_at >= ended(box, "long") + minutes * 60  # after the idle time, not before
    # The command's marker comes before the watcher records its end ("stopping", then "stopped").
    waiting.until("stopped", lambda: idle_record(box).get("state") == "stopped", timeout=30)
    log = (box.root / "long" / idle.LOG).read_text()  # the newest job's setting was followed
    assert "running self_stop: date +%s.%N" in log and "self_stop exited 0" in log


def test_a_failing_stop_is_logged_and_not_tried_for_ever(box: Box) -> None:
    setting = stop_setting(box, 0.01, command="echo no key here >&2; exit 3")
    box.job("quick", {0: "true"}, idle_stop=setting)
    box.start("quick")
    box.finished("quick")
    waiting.until("the watcher to give up", lambda: idle_record(box).get("state") == "failed")
    log = (box.root / "quick" / idle.LOG).read_text()
    assert log.count("self_stop exited 3: no key here") == idle.STOP_ATTEMPTS
    assert "not tried again" in log
    watcher = idle_record(box)
    waiting.until("the watcher to end", lambda: not alive(watcher))


def test_no_idle_stop_no_watcher(box: Box) -> None:
    box.job("plain", {0: "true"})
    box.start("plain")
    box.finished("plain")
    assert not (box.tmp / idle.RECORD).exists() and not (box.tmp / idle.OUT).exists()


def test_what_counts_as_busy(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    (root / ".ssh-9.tmp").mkdir(parents=True)  # a job directory being written
    assert idle.survey(root).busy == ".ssh-9.tmp"
    (root / ".ssh-9.tmp").rmdir()
    done = root / "ssh-1"
    done.mkdir()
    task = {"state": "COMPLETED", "end": "2026-11-24T10:00:05+00:00"}
    (done / "state.json").write_text(json.dumps({"state": "COMPLETED", "tasks": {"0": task}}))
    # An unfinished job whose executor and tasks are gone runs nothing: not busy.
    gone = root / "ssh-2"
    gone.mkdir()
    dead = {"pid": 2**22 + 7, "ticks": 1}
    state = {"state": "RUNNING", "executor": dead, "tasks": {"0": {"state": "RUNNING", **dead}}}
    (gone / "state.json").write_text(json.dumps(state))
    seen = idle.survey(root)
    assert seen.busy is None
    assert seen.last_end == datetime(2026, 11, 24, 10, 0, 5, tzinfo=timezone.utc)
    (root / "ssh-3").mkdir()  # placed a moment ago, its executor not started yet
    assert idle.survey(root).busy == "ssh-3"


@pytest.mark.parametrize(
    "given",
    [None, {}, {"minutes": 0, "command": "x"}, {"minutes": float("nan"), "command": "x"},
     {"minutes": True, "command": "x"}, {"minutes": 1, "command": "  "}, {"minutes": 1}],
)  # fmt: skip
def test_an_idle_stop_the_watcher_cannot_follow_is_none(given: Any) -> None:
    assert idle.setting({"idle_stop": given}) is None
    assert idle.setting({"idle_stop": {"minutes": 0.02, "command": "x"}}) == (0.02, "x")


def test_the_watcher_waits_for_the_idle_time(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    job = root / "ssh-1"
    job.mkdir(parents=True)
    now = datetime.now(timezone.utc)
    task = {"state": "COMPLETED", "end": now.isoformat()}
    (job / "state.json").write_text(json.dumps({"state": "COMPLETED", "tasks": {"0": task}}))
    marker = tmp_path / "stopped"
    setting = {"minutes": 0.02, "command": f"date +%s.%N > {marker}"}
    (job / "job.json").write_text(json.dumps({"idle_stop": setting}))
    began = time.time()
    assert idle.watch(root) == {"watched": True, "stopped": True, "job": "ssh-1"}
    assert float(marker.read_text()) >= now.timestamp() + 1.2 and time.time() - began < 30
