"""afterok across boxes, the runner's half: what job.json's ``after`` says per box, when a
parent's end over every box is known, and what a box's status answer awaits."""

from __future__ import annotations

import shlex
from typing import Any

from campaignops.backends.ssh import afterok as sshafter


def placed(*boxes: str) -> dict[str, Any]:
    return {"placement": [{"instance": {"name": b, "host": b, "workdir": "/w"}} for b in boxes]}


def test_each_box_is_told_whether_the_parent_runs_here_elsewhere_or_both() -> None:
    records = {"p-both": placed("box1", "box2"), "p-one": placed("box1"), "p-two": placed("box2")}
    after = ["p-both", "p-one", "p-two", "p-unknown"]
    assert sshafter.requirements(after, records, "box1") == [
        {"job": "p-both", "here": True, "elsewhere": True},
        {"job": "p-one", "here": True, "elsewhere": False},
        {"job": "p-two", "here": False, "elsewhere": True},
        # No record: the older meaning, a share here (none found there cancels, as before).
        {"job": "p-unknown", "here": True, "elsewhere": False},
    ]
    assert sshafter.requirements(after, records, "box2") == [
        {"job": "p-both", "here": True, "elsewhere": True},
        {"job": "p-one", "here": False, "elsewhere": True},
        {"job": "p-two", "here": True, "elsewhere": False},
        {"job": "p-unknown", "here": True, "elsewhere": False},
    ]


def test_the_verdict_waits_for_every_task_then_is_completed_or_the_worst_end() -> None:
    assert sshafter.verdict(["COMPLETED", "COMPLETED"]) == "COMPLETED"
    assert sshafter.verdict(["COMPLETED", "FAILED"]) == "FAILED"
    assert sshafter.verdict(["FAILED", "CANCELLED", "COMPLETED"]) == "CANCELLED"
    # A task still running, or a box that did not answer: no verdict yet.
    assert sshafter.verdict(["FAILED", "RUNNING"]) is None
    assert sshafter.verdict(["COMPLETED", "UNKNOWN"]) is None
    assert sshafter.verdict([]) is None


def test_awaited_collects_the_parents_every_job_on_the_box_waits_for() -> None:
    doc = {
        "jobs": {
            "c1": {"state": "PENDING", "awaits": ["p1"]},
            "c2": {"state": "PENDING", "awaits": ["p1", "p2"]},
            "old": {"state": "COMPLETED", "tasks": {}},  # an older executor: no "awaits"
        }
    }
    assert sshafter.awaited(doc) == {"p1", "p2"}
    assert sshafter.awaited(None) == set()
    assert sshafter.awaited({"jobs": "garbage"}) == set()


def test_the_verdict_command_is_one_quoted_executor_line() -> None:
    line = sshafter.verdict_command(
        "/w x/.campaignops/boxexec-abc.py",
        "/w x/.campaignops/jobs",
        {"ssh-2-b": "FAILED", "ssh-1-a": "COMPLETED"},
    )
    assert shlex.split(line) == [
        "python3",
        "/w x/.campaignops/boxexec-abc.py",
        "verdict",
        "/w x/.campaignops/jobs",
        "ssh-1-a=COMPLETED",
        "ssh-2-b=FAILED",
    ]


def test_the_plan_writes_a_verdict_only_where_awaited_and_only_once_known() -> None:
    awaiting = {"box1": {"p-done", "p-running", "p-old"}, "box2": {"p-running"}, "box3": set()}
    folded = {"p-done": "FAILED", "p-running": None, "p-other": "COMPLETED"}
    # p-old was not refreshed (it ended earlier): the ledger's end; a still-open one is no end.
    ended = {"p-old": "COMPLETED", "p-running": "COMPLETED"}
    assert sshafter.plan(awaiting, folded, ended) == {
        "box1": {"p-done": "FAILED", "p-old": "COMPLETED"}
    }
    # Nothing known yet, or nothing awaited: no box is called.
    assert sshafter.plan({"box1": {"p-running"}}, folded, {}) == {}
    assert sshafter.plan({"box1": {"p-new"}}, {}, {"p-new": "RUNNING"}) == {}
    assert sshafter.plan({}, folded, ended) == {}
