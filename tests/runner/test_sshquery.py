"""Where sshquery finds a job's boxes: this checkout's placement file, else the ledger's result
record (a job submitted from another clone); grouped so each box is asked once."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from campaignops.backends.ssh import query as sshquery
from campaignops.backends.ssh.instances import Instance
from campaignops.model import ledger_writer as lw

WHEN = dt.datetime(2026, 11, 24, 10, 0, tzinfo=dt.timezone.utc)
COMMIT = "c" * 40


def entry(
    name: str, job: str, indices: list[int], executor: str = "boxexec-aaaa.py"
) -> dict[str, object]:
    return {
        "instance": {
            "name": name,
            "host": f"u@{name}",
            "port": 22,
            "identity": None,
            "known_hosts": None,
            "workdir": "/w",
        },
        "commit": COMMIT,
        "dir": f"/w/camp/{COMMIT}",
        "job_dir": f"/w/.campaignops/jobs/{job}",
        "executor": f"/w/.campaignops/{executor}",
        "indices": indices,
        "pid": 42,
        "via": "tmux",
    }


def with_page(root: Path, *names: str) -> None:
    """The backend page listing the instances the entries name, as entry() records them."""
    boxes = [{"name": n, "host": f"u@{n}", "port": 22, "workdir": "/w"} for n in names]
    (root / "backends").mkdir(exist_ok=True)
    (root / "backends/generic-ssh.md").write_text(
        f"---\nplatform: generic-ssh\nkind: ssh\ninstances: {json.dumps(boxes)}\n---\n"
    )


def test_a_clone_finds_the_boxes_in_the_ledger(tmp_path: Path) -> None:
    with_page(tmp_path, "a", "b")
    mine = {
        "job_id": "ssh-1-aaaaaa",
        "name": "c.x.smoke",
        "placement": [entry("a", "ssh-1-aaaaaa", [0])],
    }
    own = tmp_path / ".campaign/ssh/generic-ssh"
    own.mkdir(parents=True)
    (own / "ssh-1-aaaaaa.json").write_text(json.dumps(mine))
    other = [entry("a", "ssh-2-bbbbbb", [0, 2], "boxexec-bbbb.py"), entry("b", "ssh-2-bbbbbb", [1])]
    lw.append(
        tmp_path,
        [
            lw.intent_record(
                ledger_id="L20261124T100000Z-000000000001",
                time=WHEN,
                campaign="c",
                backend="generic-ssh",
                stage="smoke",
                targets=["x", "y", "z"],
                fingerprint="sha256:" + "0" * 64,
                commit=COMMIT,
                manifest="manifests/m.yaml",
                name="c.xyz.smoke",
            ),
            lw.result_record(
                ledger_id="L20261124T100000Z-000000000001",
                time=WHEN,
                job_id="ssh-2-bbbbbb",
                submitted=WHEN,
                state="PENDING",
                placement=other,
            ),
        ],
    )
    found = sshquery.placements(
        tmp_path, "generic-ssh", ["ssh-1-aaaaaa", "ssh-2-bbbbbb", "local-1"]
    )
    assert found["ssh-1-aaaaaa"] == mine
    assert found["ssh-2-bbbbbb"] == {
        "job_id": "ssh-2-bbbbbb",
        "name": "c.xyz.smoke",
        "comment": f"L20261124T100000Z-000000000001 {COMMIT}",
        "submitted": "2026-11-24T10:00:00Z",
        "placement": other,
    }
    boxes, refused = sshquery.by_instance(tmp_path, "generic-ssh", found)
    assert refused == []
    assert sorted(boxes) == ["a", "b"]  # two jobs on box a: still one call there
    assert sorted(boxes["a"].jobs) == ["ssh-1-aaaaaa", "ssh-2-bbbbbb"]
    assert boxes["a"].instance == Instance(name="a", host="u@a", port=22, workdir="/w")
    assert boxes["a"].executor == "/w/.campaignops/boxexec-bbbb.py"
