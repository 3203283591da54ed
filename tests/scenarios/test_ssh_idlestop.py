"""Story: a rented box stops itself once idle (issue 19, gap 10), through `campaign submit` on the
real sshd boxes of tests/scenarios/test_ssh.py.

campaign.yaml sets ``budgets.idle_stop_minutes: 0.02`` (1.2 s) and the generic-ssh page gives a
``self_stop`` that writes the time it ran to a marker file in the box user's home. A job whose
task waits for a gate holds box1; a quick job ends beside it, and the box's watcher starts: it
does not stop the box while the gated task runs, however long past the idle time. Once the gate
opens and that task ends, the marker appears, after the idle time and not before, and `campaign
status` says the box was due to stop itself.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from campaignops.remote import idle
from tests import waiting
from tests.conftest import git
from tests.scenarios import test_ssh as story

camp = story.camp  # the campaign with the two boxes on its page
ssh_log = story.ssh_log
pytestmark = pytest.mark.ssh

MINUTES = 0.02
SELF_STOP = 'date +%s.%N > "$HOME/self-stopped"'
GATED = """\
backend: generic-ssh
ssh: box1
resources: {time: "00:10:00"}
jobs:
  - id: gated
    cmd: bash -c 'while [ ! -e "$HOME/go" ]; do sleep 0.1; done'
"""
QUICK = """\
backend: generic-ssh
ssh: box1
resources: {time: "00:10:00"}
jobs:
  - id: quick
    cmd: "true"
"""


def watcher(box: Any) -> dict[str, Any]:
    try:
        return dict(json.loads((box.workdir / ".campaignops" / idle.RECORD).read_text()))
    except (OSError, ValueError):
        return {}


def task_end(box: Any, job_id: str) -> float:
    state = story.box_state(box, job_id)
    return max(datetime.fromisoformat(t["end"]).timestamp() for t in state["tasks"].values())


def test_an_idle_box_stops_itself_but_never_while_a_task_runs(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    policy = camp / "campaign.yaml"
    policy.write_text(
        re.sub(r"\nbudgets:[^\n]*\n", f"\\g<0>  idle_stop_minutes: {MINUTES}\n", policy.read_text())
    )
    page = camp / "backends/generic-ssh.md"
    page.write_text(
        page.read_text().replace(
            "\nverified:",
            f"\nself_stop: '{SELF_STOP}'\nself_stop_irreversible: false\nverified:",
            1,
        )
    )
    (camp / "manifests/gated.yaml").write_text(GATED)
    (camp / "manifests/quick.yaml").write_text(QUICK)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "box1 stops itself once idle")
    checked = run("check")
    assert checked.code == 0, checked.out + checked.err
    box1 = ssh_boxes[0]
    marker = box1.home / "self-stopped"

    assert run("submit", "manifests/gated.yaml", "--stage", "smoke").code == 0
    gated = str(story.newest(camp).job_id)
    story.wait_for(
        "the gated task to run",
        lambda: (
            story.box_state(box1, gated).get("tasks", {}).get("0", {}).get("state") == "RUNNING"
        ),
    )
    doc = json.loads((box1.workdir / ".campaignops/jobs" / gated / "job.json").read_text())
    assert doc["idle_stop"] == {"minutes": MINUTES, "command": SELF_STOP}
    assert run("submit", "manifests/quick.yaml", "--stage", "smoke").code == 0
    quick = str(story.newest(camp).job_id)
    story.wait_for(
        "the quick job to end", lambda: story.box_state(box1, quick).get("state") == "COMPLETED"
    )

    # The quick job's executor handed on to the box's watcher; the gated task still runs, so
    # however long past the quick task's end plus the idle time it looks, the box stays up.
    past = task_end(box1, quick) + MINUTES * 60 + 2

    def busy_long_after() -> bool:
        seen = watcher(box1)
        checked = seen.get("checked") or "1970-01-01T00:00:00+00:00"
        return seen.get("state") == "busy" and datetime.fromisoformat(checked).timestamp() > past

    story.wait_for("the watcher to look well past the idle time", busy_long_after)
    assert not marker.exists()

    (box1.home / "go").touch()
    story.wait_for(
        "the gated task to end", lambda: story.box_state(box1, gated).get("state") == "COMPLETED"
    )
    waiting.until("box1 to stop itself", marker.exists, timeout=60)
    assert float(marker.read_text()) >= task_end(box1, gated) + MINUTES * 60  # not before
    assert watcher(box1)["state"] == "stopped"
    assert not (ssh_boxes[1].workdir / ".campaignops" / idle.RECORD).exists()  # box2 ran nothing

    assert run("status", "--refresh").code == 0
    shown = run("status")
    assert shown.code == 0
    assert "SSH instance box1 (generic-ssh) was due to stop itself at" in shown.out, shown.out
