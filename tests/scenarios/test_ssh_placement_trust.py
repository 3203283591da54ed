"""Story: a ledger line from a pull request names where to connect; nothing connects there
(docs/robustness.md, Trust boundaries: where ssh connects).

The ledger merges by union, so a line can come from another clone or a pull request. Here one
says that job ssh-9-c0ffee runs on "box1", but gives another user's address and port (box2's),
another key, and a known_hosts file of the attacker's (pinning box2's key, so ssh would accept
it), and a second share on an instance the page does not list. Real sshd, the campaign of
tests/scenarios/test_ssh.py; every ssh the product starts is logged by a wrapper on PATH.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from tests.conftest import git
from tests.scenarios import test_ssh as story

camp = story.camp
ssh_log = story.ssh_log

pytestmark = pytest.mark.ssh

JOB = "ssh-9-c0ffee"
LEDGER_ID = "L20261127T100000Z-000000000009"
WHEN = dt.datetime(2026, 11, 27, 10, 0, tzinfo=dt.timezone.utc)


def crafted(root: Path, ssh_boxes, attacker: Path) -> int:  # type: ignore[no-untyped-def]
    """Append the crafted job's lines; the number of the line holding its placement."""
    box2 = ssh_boxes[1]
    commit = git(root, "rev-parse", "HEAD").strip()
    work = str(box2.workdir)
    share = {
        "commit": commit,
        "dir": f"{work}/boxes/{commit}",
        "job_dir": f"{work}/.campaignops/jobs/{JOB}",
        "executor": f"{work}/.campaignops/boxexec-0123456789ab.py",
    }
    instance = {**box2.instance(), "name": "box1", "known_hosts": str(attacker)}
    placement = [
        {**share, "instance": instance, "indices": [0]},
        {**share, "instance": {**instance, "name": "evil"}, "indices": [1]},
    ]
    lw.append(
        root,
        [
            lw.intent_record(
                ledger_id=LEDGER_ID,
                time=WHEN,
                campaign="boxes",
                backend="generic-ssh",
                stage="smoke",
                targets=["a", "b"],
                fingerprint="sha256:" + "0" * 64,
                commit=commit,
                manifest="manifests/naps.yaml",
                name="boxes.naps.smoke",
            ),
            lw.result_record(
                ledger_id=LEDGER_ID,
                time=WHEN,
                job_id=JOB,
                submitted=WHEN,
                state="RUNNING",
                placement=placement,
            ),
        ],
    )
    lines = (root / ".campaign/ledger.jsonl").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if JOB in line and "placement" in line)


def test_a_crafted_placement_is_never_connected_to_and_check_reports_it(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, ssh_log: Path, tmp_path: Path
) -> None:
    attacker = tmp_path / "attacker_known_hosts"
    attacker.write_text(ssh_boxes[1].known_hosts.read_text())
    line = crafted(camp, ssh_boxes, attacker)
    where = f".campaign/ledger.jsonl:{line}"
    assert ledger.read(camp).jobs[-1].job_id == JOB

    pulled = run("pull", JOB, "--format", "json")
    refreshed = run("status", "--refresh")
    cancelled = run("cancel", JOB)
    released = run("release", "box1")
    # Not one ssh (nor rsync's) went to the crafted address: no attacker's known_hosts, no
    # box2 port under box1's name.
    calls = ssh_log.read_text().splitlines()
    assert not [c for c in calls if str(attacker) in c], calls
    assert not [c for c in calls if f"-p {ssh_boxes[1].port}" in c], calls

    cells = json.loads(pulled.out)["cells"]
    assert pulled.code == 1 and {c["verdict"] for c in cells} == {"refused"}, pulled.out
    assert where in cells[0]["detail"] and "known_hosts" in cells[0]["detail"]
    assert "port" in cells[0]["detail"] and "'evil' is not on the page" in cells[1]["detail"]
    assert refreshed.code == 0, refreshed.err
    assert f"warning: {where}: job {JOB}'s placement on instance 'box1'" in refreshed.err
    assert cancelled.code != 0 and where in cancelled.err, cancelled.out + cancelled.err
    assert released.code == 1 and where in released.err, released.err

    checked = run("check", "--select", "POLICY006")
    assert checked.code == 1, checked.out + checked.err
    findings = [f for f in checked.out.splitlines() if "POLICY006" in f]
    assert len(findings) == 2, checked.out
    assert all(f.startswith(f"{where}:") for f in findings), findings
    assert any("known_hosts" in f and "box1" in f for f in findings), findings


def test_the_page_s_own_placements_pass_the_check(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    # Finished, so nothing of it is left running for the fixture to stop.
    entry = story.refreshed_until_finished(run, camp).record["placement"][0]
    assert entry["outputs"] == {"0": ["runs/smoke/a"], "2": ["runs/smoke/c"]}
    checked = run("check", "--select", "POLICY006")
    assert checked.code == 0, checked.out + checked.err
