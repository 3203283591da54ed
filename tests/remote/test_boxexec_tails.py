"""The box executor's ``tails``: the log tail of each named task that has ended, bounded, what
a refresh brings home (campaignops.backends.ssh.boxlogs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from campaignops.remote.commands import HOME_TAIL_BYTES
from campaignops.remote.executor import TAIL_LINES
from tests.remote.boxkit import Box

HOLD = 'while [ ! -e "go-$CAMPAIGN_TASK_INDEX" ]; do sleep 0.05; done'


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    kit = Box(tmp_path, recording=None)
    yield kit
    kit.stop_everything()


def test_only_ended_tasks_answer_with_their_last_lines_bounded(box: Box) -> None:
    long = "x" * 1000
    box.job("j", {0: f"seq 1 300; echo {long}; echo last", 1: HOLD, 2: "echo two; exit 4"})
    box.start("j")
    box.until("j", lambda v: v["tasks"]["2"]["state"] == "FAILED", "2 failed")
    box.until("j", lambda v: v["tasks"]["0"]["state"] == "COMPLETED", "0 done")
    got = box.call("tails", str(box.root), "j=0,1,2,7", "nosuch=0", "../j=0")
    assert set(got) == {"j"} and set(got["j"]) == {"0", "2"}  # 1 runs, 7 is no task
    lines = got["j"]["0"].splitlines()
    assert len(lines) == TAIL_LINES and lines[-2:] == [long, "last"]
    assert got["j"]["2"] == "two\n"
    assert box.call("tails", str(box.root)) == {}


def test_a_tail_is_at_most_the_byte_bound(box: Box) -> None:
    box.job("j", {0: "for i in $(seq 1 100); do printf '%02000d\\n' $i; done"})
    box.start("j")
    box.finished("j")
    text = box.call("tails", str(box.root), "j=0")["j"]["0"]
    assert len(text.encode()) <= HOME_TAIL_BYTES and text.endswith("100\n")
