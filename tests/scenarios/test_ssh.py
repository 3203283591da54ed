"""Story: a campaign runs on two GPU boxes reached over SSH (backend generic-ssh).

The boxes are two real sshd on 127.0.0.1 with a user each (tests/sshboxes.py); everything runs
through the CLI in-process: `campaign submit` deploys the commit and starts the box executor on
each box, `campaign status --refresh` asks each box once. Waits are bounded polls (a test's
loop, not the product's). Box files are read directly (the boxes are this machine) only to
check what the test claims: which task ran where, how many times.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.ssh.backend import SUBMIT, SshBackend
from campaignops.model import ledger
from campaignops.model.states import FINISHED
from tests import waiting
from tests.conftest import git

pytestmark = pytest.mark.ssh

# Three cells that take a few seconds each, so a drop or a kill lands while they run.
NAPS = """\
backend: generic-ssh
max_parallel: 1
resources: {time: "00:10:00"}
smoke:
  args: {seconds: 3}
jobs:
  - id: a
    cmd: bash -c 'sleep "$2"; mkdir -p "$CAMPAIGN_OUT"; whoami > "$CAMPAIGN_OUT/a"' a
    args: {seconds: 3}
    output: ${CAMPAIGN_OUT}/a
  - id: b
    cmd: bash -c 'sleep "$2"; mkdir -p "$CAMPAIGN_OUT"; whoami > "$CAMPAIGN_OUT/b"' b
    args: {seconds: 3}
    output: ${CAMPAIGN_OUT}/b
  - id: c
    cmd: bash -c 'sleep "$2"; mkdir -p "$CAMPAIGN_OUT"; whoami > "$CAMPAIGN_OUT/c"' c
    args: {seconds: 3}
    output: ${CAMPAIGN_OUT}/c
"""


def front_matter_with(page: str, instances: list[dict[str, object]]) -> str:
    head, sep, rest = page.partition("\nverified:")
    return f"{head}\ninstances: {json.dumps(instances)}{sep}{rest}"


@pytest.fixture
def ssh_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every ssh the product starts, one line each (a wrapper first on PATH)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "ssh.log"
    wrapper = bindir / "ssh"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/ssh "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    log.touch()
    return log


@pytest.fixture
def camp(new_campaign, ssh_boxes, ssh_log) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    root = new_campaign(
        "boxes",
        "backends=generic-ssh,local",
        "smoke_backend=local",
        "require_pushed=no",
        "cloud_budget_usd=20",
    )
    page = root / "backends/generic-ssh.md"
    boxes = [b.instance(usd_per_hour=0.5) for b in ssh_boxes]
    page.write_text(front_matter_with(page.read_text(), boxes))
    (root / "manifests/naps.yaml").write_text(NAPS)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "two boxes, and naps")
    yield root
    for box in ssh_boxes:  # nothing of this test left running on a box
        box.start()
        box.ssh("for d in ~/work/.campaignops/jobs/*/; do touch $d/cancel; done; true")
        for pid in box.processes():
            try:  # a process listed a moment ago may have ended since: nothing left to stop
                if Path(f"/proc/{pid}/comm").read_text().strip() != "sshd":
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                continue
        box.ssh("rm -rf ~/work/* ~/work/.campaignops")


# remote/boxexec.py as the last release before the zip shipped it (at 310c466), byte for byte.
ONE_FILE_EXECUTOR = Path(__file__).resolve().parent.parent / "data" / "boxexec-one-file.py.txt"
# The submit helper of a runner from before the zip: it places the one-file executor instead.
BEFORE_THE_ZIP = (
    "import hashlib, sys\n"
    "from campaignops.backends.ssh import link, submit\n"
    "old = open(sys.argv[1], 'rb').read()\n"
    "link.executor_source = lambda: old\n"
    "link.executor_name = lambda s: 'boxexec-%s.py' % hashlib.sha256(s).hexdigest()[:12]\n"
    "sys.exit(submit.main(sys.argv[2:]))\n"
)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    return waiting.until(what, check, timeout=timeout)


def newest(root: Path) -> ledger.Job:
    return ledger.read(root).jobs[-1]


def refreshed_until_finished(run, root: Path) -> ledger.Job:  # type: ignore[no-untyped-def]
    def done() -> ledger.Job | None:
        assert run("status", "--refresh").code == 0
        job = newest(root)
        return job if job.state in FINISHED else None

    return wait_for("the job to finish", done)


def box_state(box: Any, job_id: str) -> dict[str, Any]:
    path = box.workdir / ".campaignops/jobs" / job_id / "state.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def test_the_example_queue_runs_on_both_boxes(camp: Path, run, ssh_boxes, ssh_log: Path) -> None:  # type: ignore[no-untyped-def]
    sub = run(
        "submit", "manifests/example-queue.yaml", "--stage", "smoke", "--backend", "generic-ssh"
    )
    assert sub.code == 0, sub.err
    job = newest(camp)
    assert job.job_id is not None and job.job_id.startswith("ssh-")
    placement = job.record["placement"]
    commit = git(camp, "rev-parse", "HEAD").strip()
    assert [(p["instance"]["name"], p["indices"], p["commit"]) for p in placement] == [
        ("box1", [0], job.text("commit")),
        ("box2", [1], job.text("commit")),
    ]
    assert all(
        p["dir"] == f"{b.workdir}/boxes/{p['commit']}"
        for p, b in zip(placement, ssh_boxes, strict=True)
    )
    assert all(isinstance(p["pid"], int) and p["via"] == "tmux" for p in placement)
    assert job.text("commit") == commit
    # This machine's placement files are ignored by git: nothing left to commit by hand.
    assert (camp / f".campaign/ssh/generic-ssh/{job.job_id}.json").is_file()
    assert ".campaign/ssh" not in git(camp, "status", "--porcelain", "--untracked-files=all")
    finished = refreshed_until_finished(run, camp)
    assert finished.state == "COMPLETED", finished.record
    assert {k: t["state"] for k, t in finished.record["tasks"].items()} == {
        "0": "COMPLETED",
        "1": "COMPLETED",
    }
    # Each box ran its cell in the deployed commit's tree, and wrote its output there.
    for p in placement:
        cells = sorted(d.name for d in (Path(p["dir"]) / "runs/smoke").iterdir() if d.is_dir())
        assert len(cells) == 1, (p["instance"]["name"], cells)
    # The campaign went over once, as the submitted commit's tree, beside the campaign's
    # durable output root, which the tree's runs/ leads to.
    assert sorted(d.name for d in (ssh_boxes[0].workdir / "boxes").iterdir()) == [commit, "runs"]
    assert str((ssh_boxes[0].workdir / "boxes" / commit / "runs").readlink()) == "../runs"


def test_one_refresh_is_one_ssh_call_per_box(camp: Path, run, ssh_boxes, ssh_log: Path) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = newest(camp)
    start = len(ssh_log.read_text().splitlines())
    assert run("status", "--refresh").code == 0
    lines = ssh_log.read_text().splitlines()[start:]
    assert len(lines) == 2, lines
    assert sorted(line.split(" -- ")[1].split()[0] for line in lines) == sorted(
        b.host for b in ssh_boxes
    )
    assert all(" status " in line for line in lines)
    assert refreshed_until_finished(run, camp).state == "COMPLETED"
    assert job.job_id is not None


def test_a_dropped_connection_and_a_killed_executor_do_not_stop_the_run(
    camp: Path, run, ssh_boxes
) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = newest(camp)
    job_id = str(job.job_id)
    box1 = ssh_boxes[0]  # runs a and c (round-robin), one at a time
    wait_for(
        "task 0 to run on box1",
        lambda: box_state(box1, job_id).get("tasks", {}).get("0", {}).get("state") == "RUNNING",
    )
    # The SSH drop: every open connection to box1 is cut (its sshd session processes killed).
    assert box1.sessions()  # the shared connection of the submit is still open
    box1.drop()
    # The executor itself dies (OOM killer, a reboot of the tmux server...) after task 0.
    wait_for("task 0 to end", lambda: box_state(box1, job_id)["tasks"]["0"]["state"] == "COMPLETED")
    executor = box_state(box1, job_id)["executor"]["pid"]
    os.kill(executor, signal.SIGKILL)
    finished = refreshed_until_finished(run, camp)
    assert finished.state == "COMPLETED", finished.record
    tasks = box_state(box1, job_id)["tasks"]
    # Task 0 finished before the kill and was not run again; task 2 ran after the restart.
    assert (tasks["0"]["attempts"], tasks["2"]["attempts"]) == (1, 1)
    assert box_state(box1, job_id)["executor"]["pid"] != executor
    deploy = Path(job.record["placement"][0]["dir"])
    assert (deploy / "runs/smoke/a").read_text() == f"{box1.user}\n"
    assert (deploy / "runs/smoke/c").read_text() == f"{box1.user}\n"
    # What campaign pull will verify its copies against: the executor's digests of the outputs.
    entry = job.record["placement"][0]
    listed = box1.ssh(f"python3 {entry['executor']} outputs {entry['job_dir']}")
    digest = hashlib.sha256(f"{box1.user}\n".encode()).hexdigest()
    size = len(box1.user) + 1
    assert json.loads(listed.stdout) == {
        "0": [{"path": "runs/smoke/a", "size": size, "sha256": digest}],
        "2": [{"path": "runs/smoke/c", "size": size, "sha256": digest}],
    }


def test_an_unreachable_box_is_unknown_not_failed(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = newest(camp)
    box2 = ssh_boxes[1]
    box2.stop()
    try:
        wait_for(
            "box1's tasks to end",
            lambda: box_state(ssh_boxes[0], str(job.job_id)).get("state") == "COMPLETED",
        )
        assert run("status", "--refresh").code == 0
        seen = newest(camp)
        assert seen.state not in FINISHED, seen.record
        tasks = seen.record["tasks"]
        assert {k: tasks[k]["state"] for k in sorted(tasks)} == {"0": "COMPLETED", "2": "COMPLETED"}
    finally:
        box2.start()
    assert refreshed_until_finished(run, camp).state == "COMPLETED"


def test_cancel_reaches_the_task_on_its_box(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    long = NAPS.replace("smoke:\n  args: {seconds: 3}", "smoke:\n  args: {seconds: 300}")
    (camp / "manifests/long.yaml").write_text(long)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "long naps")
    assert run("submit", "manifests/long.yaml", "--stage", "smoke").code == 0
    job_id = str(newest(camp).job_id)
    box2 = ssh_boxes[1]  # runs b only
    wait_for(
        "task 1 to run on box2",
        lambda: box_state(box2, job_id).get("tasks", {}).get("1", {}).get("state") == "RUNNING",
    )
    # While it runs, the same targets cannot be submitted again (no_sibling asks the boxes).
    again = run("submit", "manifests/long.yaml", "--stage", "smoke")
    assert again.code == 1 and "no_sibling" in again.err, again.err
    out = run("cancel", job_id, "--targets", "b", "--reason", "wrong config")
    assert out.code == 0, out.err
    wait_for(
        "task 1 to be cancelled on box2",
        lambda: box_state(box2, job_id)["tasks"]["1"]["state"] == "CANCELLED",
    )
    assert box_state(ssh_boxes[0], job_id)["tasks"]["0"]["state"] == "RUNNING"
    assert run("cancel", job_id).code == 0
    finished = refreshed_until_finished(run, camp)
    assert finished.state == "CANCELLED"
    assert {k: t["state"] for k, t in finished.record["tasks"].items()} == {
        "0": "CANCELLED",
        "1": "CANCELLED",
        "2": "CANCELLED",
    }


GPU_NAPS = """\
backend: generic-ssh
resources: {time: "00:10:00"}
smoke:
  args: {seconds: 2}
jobs:
""" + "".join(
    f"""\
  - id: {x}
    cmd: bash -c 'sleep "$2"; mkdir -p "$CAMPAIGN_OUT"; echo "$CUDA_VISIBLE_DEVICES" > "$CAMPAIGN_OUT/{x}"' {x}
    args: {{seconds: 2}}
    output: ${{CAMPAIGN_OUT}}/{x}
"""
    for x in "abc"
)


def test_each_task_gets_a_free_gpu_of_its_box(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    page = camp / "backends/generic-ssh.md"
    gpus = [
        ssh_boxes[0].instance(usd_per_hour=0.5, gpus=[0, 1]),
        ssh_boxes[1].instance(usd_per_hour=0.5, gpus=[0]),
    ]
    text = page.read_text()
    start = text.index("\ninstances: ")
    end = text.index("\n", start + 1)
    page.write_text(text[:start] + f"\ninstances: {json.dumps(gpus)}" + text[end:])
    (camp / "manifests/gpus.yaml").write_text(GPU_NAPS)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "gpus")
    # box2's only GPU is held by someone else (the replay's memory.used raised): b must wait.
    busy = ssh_boxes[1].fakebin / "nvsmi-state.json"
    busy.write_text(json.dumps({"used": {"0": 7358}}))
    try:
        assert run("submit", "manifests/gpus.yaml", "--stage", "smoke").code == 0
        job = newest(camp)
        job_id = str(job.job_id)
        box1, box2 = ssh_boxes
        wait_for(
            "box1's two tasks to end", lambda: box_state(box1, job_id).get("state") == "COMPLETED"
        )
        waiting = box_state(box2, job_id)["tasks"]["1"]
        assert waiting["state"] == "PENDING" and waiting["attempts"] == 0
        assert waiting["reason"].startswith("no GPU below 500 MiB (0: 7358 MiB used")
        assert run("status", "--refresh").code == 0
        assert newest(camp).record["tasks"]["1"]["state"] == "PENDING"
    finally:
        busy.unlink()
    assert refreshed_until_finished(run, camp).state == "COMPLETED"
    placement = newest(camp).record["placement"]
    out1, out2 = (Path(p["dir"]) / "runs/smoke" for p in placement)
    # box1 ran a and c at once, each on a GPU of its own; box2 ran b on its GPU once it was free.
    assert sorted([(out1 / "a").read_text(), (out1 / "c").read_text()]) == ["0\n", "1\n"]
    assert (out2 / "b").read_text() == "0\n"


def test_a_box_that_cannot_start_leaves_nothing_running(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    # box2's executor directory belongs to root: its job directory cannot be written there.
    blocked = ssh_boxes[1].workdir / ".campaignops"
    blocked.mkdir()
    try:
        out = run("submit", "manifests/naps.yaml", "--stage", "smoke")
    finally:
        blocked.rmdir()
    assert out.code == 1, out.err
    assert "instance box2: starting ssh-" in out.err
    assert "box1: started, then cancelled" in out.err
    job = newest(camp)
    assert job.job_id is None and job.error is not None
    (started,) = (ssh_boxes[0].workdir / ".campaignops/jobs").iterdir()
    wait_for(
        "box1's share to be cancelled",
        lambda: box_state(ssh_boxes[0], started.name).get("state") == "CANCELLED",
    )


def test_a_cell_without_its_output_fails_on_its_box(camp: Path, run, ssh_boxes) -> None:  # type: ignore[no-untyped-def]
    forgetful = NAPS.replace(
        """whoami > "$CAMPAIGN_OUT/b"' b""", """echo forgot my output' b"""
    ).replace("smoke:\n  args: {seconds: 3}", "smoke:\n  args: {seconds: 1}")
    assert "forgot my output" in forgetful
    (camp / "manifests/forgetful.yaml").write_text(forgetful)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "b forgets its output")
    assert run("submit", "manifests/forgetful.yaml", "--stage", "smoke").code == 0
    finished = refreshed_until_finished(run, camp)
    assert finished.state == "FAILED"
    tasks = finished.record["tasks"]
    assert {k: (t["state"], t["exit_code"]) for k, t in tasks.items()} == {
        "0": ("COMPLETED", 0),
        "1": ("FAILED", 97),
        "2": ("COMPLETED", 0),
    }
    assert tasks["1"]["reason"] == "output-missing"
    # The script said why, in the task's log on box2 (under the deployed commit).
    entry = finished.record["placement"][1]
    log = Path(entry["dir"]) / f"logs/{finished.text('name')}-{finished.job_id}_1.out"
    assert "campaign: output-missing: runs/smoke/b" in log.read_text()


def test_a_box_still_running_the_one_file_executor_is_read_after_the_upgrade(
    camp: Path, run, ssh_boxes, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A job placed before the executor became a zip (``boxexec-<hash>.py``, one file) keeps
    being read while that executor runs it; a job placed after gets the zip beside it."""
    helper = SshBackend._helper

    def before_the_zip(self: SshBackend, module: str, command: str, *args: str) -> list[str]:
        argv = helper(self, module, command, *args)
        if module != SUBMIT:
            return argv
        return [sys.executable, "-c", BEFORE_THE_ZIP, str(ONE_FILE_EXECUTOR), *argv[3:]]

    with monkeypatch.context() as patched:
        patched.setattr(SshBackend, "_helper", before_the_zip)
        assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    old = newest(camp)
    assert {p["executor"].rpartition("/")[2] for p in old.record["placement"]} == {
        f"boxexec-{hashlib.sha256(ONE_FILE_EXECUTOR.read_bytes()).hexdigest()[:12]}.py"
    }
    box1, job_id = ssh_boxes[0], str(old.job_id)
    wait_for("task 0 to run", lambda: box_state(box1, job_id).get("tasks", {}).get("0", {}).get(
        "state") == "RUNNING")  # fmt: skip
    executor = box_state(box1, job_id)["executor"]["pid"]
    assert Path(f"/proc/{executor}/cmdline").read_bytes().split(b"\0")[1].endswith(b".py")
    # The upgraded runner asks the one-file executor (the only one placed) ...
    assert run("status", "--refresh").code == 0
    assert newest(camp).state in ("PENDING", "RUNNING"), newest(camp).record
    sub = run(
        "submit", "manifests/example-queue.yaml", "--stage", "smoke", "--backend", "generic-ssh"
    )
    assert sub.code == 0, sub.err
    new = newest(camp)
    assert all(p["executor"].endswith(".pyz") for p in new.record["placement"])

    # ... and then the zip, the newest placed, which reads the old executor's job files too.
    def both_finished() -> bool:
        assert run("status", "--refresh").code == 0
        jobs = {j.job_id: j for j in ledger.read(camp).jobs}
        return all(jobs[j].state in FINISHED for j in (old.job_id, new.job_id))

    wait_for("both jobs to finish", both_finished)
    jobs = {j.job_id: j for j in ledger.read(camp).jobs}
    assert (jobs[old.job_id].state, jobs[new.job_id].state) == ("COMPLETED", "COMPLETED")
    assert box_state(box1, job_id)["executor"]["pid"] == executor  # never restarted
