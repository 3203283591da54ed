"""Story: results come home from two SSH boxes before either is let go (the teardown rule).

The same two real sshd boxes and campaign as tests/scenarios/test_ssh.py; `campaign pull`
copies with real rsync over the same ssh options, `campaign release` reads the ledger. The
release command is a `touch` standing in for `vastai destroy instance ID`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.model import ledger
from tests.conftest import git
from tests.scenarios import test_ssh as story

front_matter_with = story.front_matter_with
refreshed_until_finished = story.refreshed_until_finished
camp = story.camp  # the story's fixtures: the campaign with the two boxes on its page
ssh_log = story.ssh_log

pytestmark = pytest.mark.ssh


def with_release(root: Path, ssh_boxes, marker_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """The page's instances, each with a release command that leaves a marker file."""
    page = root / "backends/generic-ssh.md"
    text = page.read_text()
    head, _, rest = text.partition("\ninstances: ")
    _, _, tail = rest.partition("\n")
    boxes = [
        b.instance(usd_per_hour=0.5, release=f"touch {marker_dir}/released-{b.name}")
        for b in ssh_boxes
    ]
    page.write_text(front_matter_with(head + "\n" + tail, boxes))
    git(root, "commit", "-qam", "release commands")


def test_pull_verifies_then_release_runs_the_command(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, tmp_path: Path
) -> None:
    with_release(camp, ssh_boxes, tmp_path)
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record

    early = run("release", "box1")
    assert early.code == 1
    assert "not pulled and verified" in early.err and "not pulled" in early.err
    assert not (tmp_path / "released-box1").exists()
    refused = run("release", "box1", "--format", "json")  # the same refusal, as a document
    assert refused.code == 1 and json.loads(refused.out)["error"]["kind"] == "refused"

    pulled = run("pull", "--format", "json")
    assert pulled.code == 0, pulled.out + pulled.err
    doc = json.loads(pulled.out)
    verdicts = {(c["target"], c["instance"]): c["verdict"] for c in doc["cells"]}
    assert verdicts == {
        ("a", "box1"): "verified",
        ("b", "box2"): "verified",
        ("c", "box1"): "verified",
    }
    # Each output arrived at its own path, written by the box's own user.
    users = {b.name: b.user for b in ssh_boxes}
    for cell in doc["cells"]:
        assert cell["files"] == [f"runs/smoke/{cell['target']}"]
        assert (camp / cell["files"][0]).read_text().strip() == users[cell["instance"]]
    tasks = ledger.read(camp).jobs[-1].record["tasks"]
    assert {k: t["pulled"] for k, t in tasks.items()} == {
        "0": "verified",
        "1": "verified",
        "2": "verified",
    }

    ledger_before = (camp / ".campaign" / "ledger.jsonl").read_bytes()
    preview = run("release", "box1", "--dry-run", "--format", "json")
    assert preview.code == 0, preview.out
    assert json.loads(preview.out)["command"] == f"touch {tmp_path}/released-box1"
    assert json.loads(preview.out)["recorded"] is False
    assert (camp / ".campaign" / "ledger.jsonl").read_bytes() == ledger_before  # nothing recorded

    shown = run("release", "box1")
    assert shown.code == 0, shown.err
    assert f"run: touch {tmp_path}/released-box1" in shown.out
    assert not (tmp_path / "released-box1").exists()  # printed, never run without --yes

    done = run("release", "box2", "--yes")
    assert done.code == 0, done.err
    assert (tmp_path / "released-box2").exists()
    last = ledger.read(camp).jobs[-1].record
    assert last["release_instance"] == "box2" and last["release_ran"] is True
    assert last["release_exit"] == 0 and last["tasks"]["1"]["released"]

    status = run("status")
    assert status.code == 0, status.err
    rows = [line.split() for line in status.out.splitlines() if line.strip().startswith("box")]
    # Both let go (box1's command printed, box2's run): their meters stop; $0.5/h from the page.
    assert [(r[0], r[1], r[5], r[7]) for r in rows] == [
        ("box1", "generic-ssh", "0.5", "released"),
        ("box2", "generic-ssh", "0.5", "released"),
    ]


def test_an_emptied_output_is_reported_and_failed_resubmits_only_it(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes
) -> None:
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record
    deploy = Path(job.record["placement"][1]["dir"])  # box2 ran b
    (deploy / "runs/smoke/b").write_text("")  # lost on the box after the task checked it

    pulled = run("pull")
    assert pulled.code == 1
    assert "b on box2: empty" in pulled.out and "a on box1: verified" in pulled.out
    refused = run("release", "box2")
    assert refused.code == 1 and "(b): empty" in refused.err

    again = run("submit", "manifests/naps.yaml", "--stage", "smoke", "--failed", "--dry-run")
    assert again.code == 0, again.out + again.err
    assert "== boxes.b.smoke on generic-ssh: 1 task(s)" in again.out, again.out


def test_a_verify_command_that_fails_is_no_evidence(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    assert refreshed_until_finished(run, camp).state == "COMPLETED"
    pulled = run("pull", "--verify", "grep -q ^nobody$ {out}")
    assert pulled.code == 1
    assert pulled.out.count(": verify-failed") == 3 and "3 verify-failed" in pulled.out
    assert run("release", "box1").code == 1


def test_the_example_queue_from_submit_to_pull_with_cells_instances_and_costs(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    """The issue's acceptance: a new user's example queue over SSH, from campaign submit to
    campaign pull with verified outputs; STATUS.md shows every cell, its instance and cost."""
    sub = run(
        "submit", "manifests/example-queue.yaml", "--stage", "smoke", "--backend", "generic-ssh"
    )
    assert sub.code == 0, sub.err
    job = refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record
    pulled = run("pull", str(job.job_id), "--format", "json")
    assert pulled.code == 0, pulled.out + pulled.err
    cells = json.loads(pulled.out)["cells"]
    assert {c["verdict"] for c in cells} == {"verified"} and len(cells) == len(job.targets)
    for c in cells:  # each cell's directory came home: its wrapper's cell.json among the files
        assert f"runs/smoke/{c['target']}/cell.json" in c["files"]
        assert (camp / f"runs/smoke/{c['target']}/cell.json").is_file()
    status = (camp / "STATUS.md").read_text()
    for c in cells:
        row = next(line for line in status.splitlines() if line.startswith(f"| {c['target']} |"))
        assert f"on {c['instance']}, $" in row, row
