"""Story: a box whose executor answers garbage (issue 16, item 6), through the CLI, real sshd.

The naps job runs on both boxes (box1: tasks 0 and 2, box2: task 1) and ends there. Then the
executor file on box2 (the one its status call runs) is replaced by a script that prints a
malformed answer, or crashes with a traceback. Each `campaign status --refresh` must exit 0
with one warning line naming box2 and no traceback; box1's tasks are recorded, box2's task is
not (UNKNOWN is never recorded), and the job is not declared ended. With the real executor
back, the next refresh records the job COMPLETED.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from campaignops.model.states import FINISHED
from tests.scenarios import test_ssh as story

camp = story.camp  # the story's fixtures: the campaign with the two boxes on its page
ssh_log = story.ssh_log

pytestmark = pytest.mark.ssh


def garbage(job_id: str) -> dict[str, str]:
    """Executors that answer what the real one never prints: name → Python source."""
    answers = {
        "a list": [1],
        "jobs a list": {"jobs": [1]},
        "a job a string": {"jobs": {job_id: "x"}},
        "a task a string": {
            "jobs": {job_id: {"state": "RUNNING", "executor_alive": True, "tasks": {"1": "x"}}}
        },
        "a task index not ASCII": {
            "jobs": {job_id: {"state": "RUNNING", "executor_alive": True, "tasks": {"²": {}}}}
        },
    }
    scripts = {name: f"print({json.dumps(json.dumps(doc))})\n" for name, doc in answers.items()}
    scripts["deep nesting"] = "print('[' * 100000)\n"
    scripts["not JSON"] = "print('ok, fine')\n"
    scripts["a traceback"] = "import json\njson.loads(open('/nonexistent/state.json').read())\n"
    # Well formed, but the box's own words on the job hold a line break and terminal controls.
    said = {"state": "UNKNOWN", "executor_alive": True, "tasks": {}, "error": "a\n\x1b]0;x\x07b"}
    scripts["words with controls"] = f"print({json.dumps(json.dumps({'jobs': {job_id: said}}))})\n"
    return scripts


def test_a_box_answering_garbage_leaves_its_tasks_unknown(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = story.newest(camp)
    job_id = str(job.job_id)
    for box in ssh_boxes:
        story.wait_for(
            f"the job to end on {box.name}",
            lambda box=box: story.box_state(box, job_id).get("state") == "COMPLETED",
        )
    executor = Path(
        next(p["executor"] for p in job.record["placement"] if p["instance"]["name"] == "box2")
    )
    real = executor.read_bytes()
    try:
        for name, source in garbage(job_id).items():
            executor.write_text(source)
            done = run("status", "--refresh")
            assert done.code == 0, (name, done.err)
            assert "Traceback" not in done.err + done.out, (name, done.err)
            warned = [line for line in done.err.splitlines() if line.startswith("warning:")]
            assert len(warned) == 1 and "instance box2: " in warned[0], (name, done.err)
            assert "unusable answer" in warned[0] or name == "words with controls", done.err
            assert "\x1b" not in done.err and "\x07" not in done.err, (name, done.err)
            seen = story.newest(camp)
            assert seen.state not in FINISHED, (name, seen.record)
            tasks = seen.record.get("tasks") or {}
            assert {k: tasks[k]["state"] for k in sorted(tasks)} == {
                "0": "COMPLETED",
                "2": "COMPLETED",
            }, (name, seen.record)
    finally:
        executor.write_bytes(real)
    assert story.refreshed_until_finished(run, camp).state == "COMPLETED"


def test_a_control_directory_others_can_enter_is_not_used_and_said_once(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, ssh_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 2 through the CLI: the runtime directory holds a control directory open to all
    (as another user could leave it in /tmp; tests/runner/test_sshlink_control.py does that
    with a real second user). The refresh works, on connections of its own, and says why once."""
    runtime = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    try:
        hostile = runtime / f"campaignops-ssh-{os.getuid()}"
        hostile.mkdir()
        hostile.chmod(0o777)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
        start = len(ssh_log.read_text().splitlines())
        done = run("status", "--refresh")
        assert done.code == 0, done.err
        warned = [line for line in done.err.splitlines() if "no shared connection" in line]
        assert len(warned) == 1 and f"{hostile} has mode 0777" in warned[0], done.err
        argvs = ssh_log.read_text().splitlines()
        assert len(argvs) > start and not any("Control" in a for a in argvs), argvs
        assert list(hostile.iterdir()) == []
        assert story.refreshed_until_finished(run, camp).state == "COMPLETED"
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
