"""What a pull trusts: the paths a box may fill (campaignops.backends.ssh.outputs), the files it may
vouch for (pull.choose: the record's declared outputs only), how pulled files are read (never
through a link), and which placements are reached (sshplaced: the page's, by name).
The real-sshd stories are tests/scenarios/test_ssh_pull_hostile.py and
test_ssh_placement_trust.py."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import outputs as outputpaths
from campaignops.backends.ssh import placement as sshplaced
from campaignops.backends.ssh import pull, release, roster
from campaignops.backends.ssh.instances import Instance
from campaignops.model import ledger_writer as lw

ROOT = "runs/smoke"
COMMIT = "c" * 40
WHEN = dt.datetime(2026, 11, 27, 10, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "is absolute"),
        ("runs/smoke/../../x", "'..'"),
        ("runs/smoke//a", "empty"),
        ("runs/smoke/./a", "'.'"),
        ("runs/smoke/a/.git/config", ".git"),
        ("runs/smoke/a/.GiT/hooks/x", ".git"),
        ("runs/smoke/.git", ".git"),
        ("runs/smoke/a\nb", "control"),
        ("README.md", "not under runs/smoke/"),
        ("runs/smokey/a", "not under runs/smoke/"),
        ("runs/smoke", "not under runs/smoke/"),
        ("", "not a path"),
    ],
)
def test_a_path_a_box_may_not_fill(path: str, why: str) -> None:
    problem = outputpaths.problem(path, ROOT)
    assert problem is not None and why in problem


def test_paths_under_the_stage_root_may_be_filled() -> None:
    for path in ("runs/smoke/a", "runs/smoke/cell/metrics.json", "runs/smoke/.gitkeep"):
        assert outputpaths.problem(path, ROOT) is None


def test_a_pulled_file_is_never_read_through_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0\n")
    out = tmp_path / "runs/smoke"
    out.mkdir(parents=True)
    (out / "link").symlink_to(secret)
    os.mkfifo(out / "fifo")  # a read would block forever
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/m.json").write_text("{}")
    (out / "dirlink").symlink_to(tmp_path / "elsewhere")
    (out / "real").write_text("ok")
    paths = ["runs/smoke/link", "runs/smoke/fifo", "runs/smoke/dirlink/m.json", "runs/smoke/real"]
    assert set(roster.local_facts(tmp_path, paths)) == {"runs/smoke/real"}
    with pytest.raises(OSError):
        roster.file_fact(out / "link")
    assert outputpaths.parents_problem(tmp_path, "runs/smoke/dirlink/m.json") is not None


def entry(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_the_box_vouches_only_for_the_cells_declared_outputs() -> None:
    listed = [
        entry("README.md", b"# readme\n"),  # its right digest: still not this cell's
        entry("runs/smoke/a/metrics.json", b"{}"),
        entry("runs/smoke/a/.git/config", b"[core]"),
        entry("runs/smoke/b", b"another cell's"),
        entry("runs/smoke/ab", b"a prefix, not a directory"),
    ]
    chosen = pull.choose(["runs/smoke/a", "runs/smoke/z"], listed, "smoke")
    assert chosen.outputs == ("runs/smoke/a/metrics.json", "runs/smoke/z")
    assert set(chosen.facts) == {"runs/smoke/a/metrics.json"}
    assert set(chosen.ignored) == {
        "README.md",
        "runs/smoke/a/.git/config",
        "runs/smoke/b",
        "runs/smoke/ab",
    }


def test_a_declared_output_outside_the_stage_root_is_refused() -> None:
    assert pull.declared_problem(["runs/smoke/a"], "smoke") is None
    assert "campaign.yaml" in str(pull.declared_problem(["campaign.yaml"], "smoke"))
    assert "not one of" in str(pull.declared_problem(["runs/x/a"], "../x"))


BOX = Instance(name="box1", host="u@h", workdir="/w", port=2222, known_hosts="/k")


def placement(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "instance": BOX.record(),
        "commit": COMMIT,
        "dir": f"/w/camp/{COMMIT}",
        "job_dir": "/w/.campaignops/jobs/ssh-1-aaaaaa",
        "executor": "/w/.campaignops/boxexec-0123456789ab.py",
        "indices": [0],
    }
    return doc | over


@pytest.mark.parametrize(
    ("over", "what"),
    [
        ({"instance": BOX.record() | {"port": 22}}, "port 22 where the page says 2222"),
        ({"instance": BOX.record() | {"port": True}}, "port True"),
        ({"instance": BOX.record() | {"known_hosts": "/tmp/evil"}}, "known_hosts '/tmp/evil'"),
        ({"instance": BOX.record() | {"identity": "/tmp/key"}}, "identity '/tmp/key'"),
        ({"instance": BOX.record() | {"host": "evil@h"}}, "host 'evil@h'"),
        ({"instance": BOX.record() | {"workdir": "/"}}, "workdir '/'"),
        ({"instance": BOX.record() | {"name": "box9"}}, "'box9' is not on the page"),
        ({"job_dir": "/w/.campaignops/jobs/../../etc"}, "job_dir"),
        ({"job_dir": "/w/.campaignops/jobs/ssh-1-aaaaaa; reboot"}, "job_dir"),
        ({"executor": "/w/.campaignops/../x.py"}, "executor"),
        ({"executor": "/w/.campaignops/boxexec-1.py $(id)"}, "executor"),
        ({"dir": "/w/../etc/" + COMMIT}, "dir"),
        ({"dir": "/elsewhere/camp/" + COMMIT}, "dir"),
        ({"dir": f"/w/camp/{'d' * 40}"}, "dir"),
        ({"indices": [0, "1"]}, "indices"),
        ({"outputs": {"0": "runs/smoke/a"}}, "outputs"),
    ],
)
def test_a_placement_the_page_does_not_give_is_refused(over: dict[str, Any], what: str) -> None:
    page = {"box1": BOX}
    assert sshplaced.differences(placement(), page, "ssh-1-aaaaaa") == []
    wrong = sshplaced.differences(placement(**over), page, "ssh-1-aaaaaa")
    assert any(what in w for w in wrong), wrong
    with pytest.raises(sshplaced.Refused, match="nothing connects to it"):
        sshplaced.resolve(placement(**over), page, job_id="ssh-1-aaaaaa", backend="b", where="L:3")


def campaign(root: Path, share: dict[str, Any]) -> None:
    """A campaign whose page lists box1 and whose ledger holds one ssh job placed on it."""
    (root / "backends").mkdir()
    boxes = [BOX.record() | {"port": 2222}]
    (root / "backends/generic-ssh.md").write_text(
        f"---\nplatform: generic-ssh\nkind: ssh\ninstances: {json.dumps(boxes)}\n---\n"
    )
    lw.append(
        root,
        [
            lw.intent_record(
                ledger_id="L20261127T100000Z-000000000001",
                time=WHEN,
                campaign="camp",
                backend="generic-ssh",
                stage="smoke",
                targets=["a"],
                fingerprint="sha256:" + "0" * 64,
                commit=COMMIT,
                manifest="manifests/m.yaml",
            ),
            lw.result_record(
                ledger_id="L20261127T100000Z-000000000001",
                time=WHEN,
                job_id="ssh-1-aaaaaa",
                state="COMPLETED",
                placement=[share],
            ),
        ],
    )


def test_a_record_from_before_outputs_were_recorded_copies_nothing(tmp_path: Path) -> None:
    campaign(tmp_path, placement())  # no "outputs": an older submit
    listed = [entry("runs/smoke/a", b"x"), entry("README.md", b"y")]
    answer = f"{pull.JOB_MARK}ssh-1-aaaaaa\n" + json.dumps({"0": listed}) + "\n"
    reached: list[Instance] = []

    def call(box: Instance, command: str) -> sshlink.Answer:
        reached.append(box)
        return sshlink.Answer(0, answer, "", 1)

    def run(*args: object, **kwargs: object) -> None:
        raise AssertionError("nothing may be copied")

    pulled = release.run_pull(tmp_path, job=None, verify=None, now=WHEN, call=call, run=run)
    assert [c.verdict for c in pulled.cells] == [pull.UNRECORDED]
    assert "recorded before" in pulled.cells[0].detail
    assert reached == [BOX]  # the page's instance, reached by name
    # Recorded, so that campaign submit --failed resubmits it with outputs recorded.
    [record] = pull.records(pulled.cells, time=WHEN)
    assert record["tasks"]["0"]["pulled"] == pull.UNRECORDED


def test_a_declared_output_is_copied_through_a_private_list(tmp_path: Path) -> None:
    campaign(tmp_path, placement(outputs={"0": ["runs/smoke/a"]}))
    answer = f"{pull.JOB_MARK}ssh-1-aaaaaa\n" + json.dumps({"0": [entry("runs/smoke/a", b"x")]})
    calls: list[dict[str, Any]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append({"argv": argv, "stdin": kwargs["input"]})
        stage = Path(argv[-1])
        for rel in kwargs["input"].split("\0")[:-1]:  # the box sends what it is asked for
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_bytes(b"x" if rel.startswith("runs/") else b"the log\n")
        return type("Done", (), {"returncode": 0, "stderr": ""})()

    steps: list[str] = []
    pulled = release.run_pull(
        tmp_path,
        job=None,
        verify=None,
        now=WHEN,
        call=lambda box, command: sshlink.Answer(0, answer, "", 1),
        run=run,
        step=steps.append,
    )
    assert [c.verdict for c in pulled.cells] == [pull.VERIFIED], pulled.cells
    # What a terminal shows as it goes (campaign pull): the call, the transfer, the check.
    assert steps == [
        "box1: asking for the finished outputs",
        f"box1: copying 1 file(s), 1 B, from /w/camp/{COMMIT}",
        f"box1: copying 1 log(s) from /w/camp/{COMMIT}",  # the task's whole log (boxlogs)
        "verifying 1 cell(s)",
    ]
    seen, logs = calls
    assert seen["stdin"] == "runs/smoke/a\0" and "--files-from=-" in seen["argv"]
    assert "-a" not in seen["argv"] and "--no-links" in seen["argv"]
    assert seen["argv"][-1].startswith(str(tmp_path / ".campaign/ssh/.pull/box1"))
    assert (tmp_path / "runs/smoke/a").read_bytes() == b"x"
    # The log: the executor's name on the box, the backend's log_path here (one task: no index).
    assert logs["stdin"] == "logs/-ssh-1-aaaaaa_0.out\0" and logs["argv"][1:] == seen["argv"][1:]
    assert (tmp_path / "logs/-ssh-1-aaaaaa.out").read_text() == "the log\n"
    assert not (tmp_path / ".campaign/ssh/.pull").exists()


def test_check_finds_every_unvouched_placement_line(tmp_path: Path) -> None:
    campaign(tmp_path, placement(outputs={"0": ["runs/smoke/a"]}))
    assert list(sshplaced.unvouched(tmp_path)) == []
    crafted = placement(instance=BOX.record() | {"known_hosts": "/tmp/evil"})
    lw.append(
        tmp_path,
        [
            lw.result_record(
                ledger_id="L20261127T100000Z-000000000001",
                time=WHEN,
                job_id="ssh-1-aaaaaa",
                placement=[crafted],
            )
        ],
    )
    found = list(sshplaced.unvouched(tmp_path))
    assert [(u.line, u.job_id, u.backend, u.name) for u in found] == [
        (3, "ssh-1-aaaaaa", "generic-ssh", "box1")
    ]
    assert "known_hosts '/tmp/evil'" in found[0].what
