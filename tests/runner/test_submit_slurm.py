"""campaign submit / status through the gates on the real Slurm cluster (tests/runner/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.conftest import git

pytestmark = pytest.mark.slurm

FAILING = """\
backend: generic-slurm
resources: {time: "00:05:00", mem: 100M}
jobs:
  - id: crash
    cmd: 'bash -c "echo ValueError - bad input 17 >&2; exit 3"'
"""


@pytest.fixture
def camp(tmp_path: Path, new_campaign, slurm_cluster) -> Path:  # type: ignore[no-untyped-def]
    root = new_campaign(
        "sl",
        "backends=generic-slurm,local",
        "smoke_backend=generic-slurm",
        "require_pushed=yes",  # the refusal of an unpushed HEAD below (the default is no)
    )
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(upstream))
    git(root, "remote", "add", "origin", str(upstream))
    git(root, "push", "-q", "-u", "origin", "main")
    return root


def settle(run, root: Path, *, want: set[str], timeout: float = 120) -> ledger.Job:  # type: ignore[no-untyped-def]
    """The newest job once its state is in ``want`` (tests/waiting.py)."""
    return waiting.settled(run, root, want=want, timeout=timeout)


def test_gates_and_a_smoke_on_slurm(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    argv = ["submit", "manifests/example.yaml", "--backend", "generic-slurm"]
    # An unpushed HEAD is refused (require_pushed), then accepted once pushed.
    (camp / "LESSONS.md").write_text((camp / "LESSONS.md").read_text() + "\n")
    git(camp, "commit", "-qam", "local only")
    unpushed = run(*argv, "--stage", "smoke")
    assert unpushed.code == 1 and "committed" in unpushed.err and "push" in unpushed.err
    git(camp, "push", "-q")
    production = run(*argv, "--stage", "production")
    assert production.code == 1 and "smoke_first" in production.err
    smoke = run(*argv, "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    job = settle(run, camp, want={"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"})
    assert (job.state, job.record.get("exit_code")) == ("COMPLETED", 0), job.record
    assert str(job.record["job_id"]).isdigit()
    assert job.record.get("started") and job.record.get("ended")
    assert len(list((camp / "runs/smoke/example").glob("*/metrics.json"))) == 4
    git(camp, "commit", "-qam", "smoke done")
    git(camp, "push", "-q")
    again = run(*argv, "--stage", "production", "--dry-run")
    assert again.code == 0 and "gate smoke_first  pass" in again.out


def test_breaker_after_three_same_signature_failures(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    (camp / "manifests/crash.yaml").write_text(FAILING)
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a crashing target")
    git(camp, "push", "-q")
    for _ in range(3):
        assert run("submit", "manifests/crash.yaml", "--stage", "smoke").code == 0
        job = settle(run, camp, want={"FAILED", "COMPLETED"})
        assert (job.state, job.record.get("exit_code")) == ("FAILED", 3)
    fourth = run("submit", "manifests/crash.yaml", "--stage", "smoke")
    assert fourth.code == 1 and "breaker" in fourth.err
    forced = run(
        "submit", "manifests/crash.yaml", "--stage", "smoke", "--override", "fixed the input"
    )
    assert forced.code == 0, forced.err
    intent = ledger.read(camp).jobs[-1]
    assert intent.record.get("override") == "fixed the input"


def test_dirty_tree_untracked_manifest_and_a_pending_sibling(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    argv = ["submit", "manifests/example.yaml", "--backend", "generic-slurm", "--stage", "smoke"]
    manifest = camp / "manifests/example.yaml"
    original = manifest.read_text()
    manifest.write_text(original + "# edited on the cluster\n")
    dirty = run(*argv)
    assert dirty.code == 1 and "committed" in dirty.err and "manifests/example.yaml" in dirty.err
    manifest.write_text(original)
    (camp / "manifests/new.yaml").write_text("jobs: [{id: x, cmd: 'true'}]\n")
    untracked = run(*argv)
    assert (
        untracked.code == 1
        and "committed" in untracked.err
        and "manifests/new.yaml" in untracked.err
    )
    (camp / "manifests/new.yaml").unlink()
    assert ledger.read(camp).jobs == ()
    # Hold the smoke PENDING behind a sleeping job, then ask for it again: the sibling gate.
    # Its output goes nowhere: by default Slurm writes slurm-ID.out into the submitting
    # directory, the campaign, once the job starts, and when it started before the second
    # submit (on a loaded machine) that untracked file, not the sibling, was the refusal.
    blocker = (
        subprocess.run(
            [
                *("sbatch", "--parsable", "--time=00:05:00", "--mem=10M"),
                *("--output=/dev/null", "--wrap=sleep 120"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .split(";")[0]
    )
    try:
        first = run(*argv, "--after", blocker)
        assert first.code == 0, first.err
        second = run(*argv)
        assert second.code == 1 and "no_sibling" in second.err
        assert len(ledger.read(camp).jobs) == 1  # one record chain: the refusal wrote nothing
    finally:
        subprocess.run(["scancel", blocker], check=False)
        job_id = ledger.read(camp).jobs[-1].record.get("job_id")
        if job_id:
            subprocess.run(["scancel", str(job_id)], check=False)


def test_a_queue_file_is_one_array_job_on_slurm(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    # The example smokes on local (this campaign authorizes it); the cluster is asked for.
    argv = ("submit", "manifests/example-queue.yaml", "--backend", "generic-slurm")
    smoke = run(*argv, "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    assert "sl.example-queue.smoke on generic-slurm: 2 task(s)" in smoke.out
    job = settle(run, camp, want={"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"})
    assert (job.state, job.record.get("exit_code")) == ("COMPLETED", 0), job.record
    job_id = str(job.record["job_id"])
    # One sbatch call, one job id: the cells are the tasks of one array, as sacct records them.
    tasks = subprocess.run(
        ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,JobName,State"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert sorted(tasks) == [
        f"{job_id}_0|sl.example-queue.smoke|COMPLETED",
        f"{job_id}_1|sl.example-queue.smoke|COMPLETED",
    ]
    statuses = sorted(p.parent.name for p in camp.glob("runs/smoke/*/cell.json"))
    assert statuses == ["baseline", "wide"]


def test_a_scheduler_that_stays_down_is_exit_2_and_nothing_is_recorded(
    camp: Path, run, slurm_cluster, monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import re
    import socket

    # The same cluster's configuration with the controller moved to a port nobody listens on:
    # the real squeue and sbatch, failing the way they do when slurmctld is down.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    conf = slurm_cluster.conf.read_text()
    dead = tmp_path / "dead-slurm.conf"
    # MessageTimeout=2: a client tries to connect once a second for MessageTimeout seconds
    # (10 by default) before it says "Unable to contact slurm controller (connect failure)";
    # the same failure after 2 s, so that the four attempts take 11 s instead of 43.
    conf = re.sub(r"(?m)^SlurmctldPort=\d+", f"SlurmctldPort={dead_port}", conf)
    dead.write_text(f"MessageTimeout=2\n{conf}")
    monkeypatch.setenv("SLURM_CONF", str(dead))
    status_before = (camp / "STATUS.md").read_text()
    down = run("submit", "manifests/example.yaml", "--backend", "generic-slurm", "--stage", "smoke")
    assert down.code == 2
    assert "failed 4 times" in down.err and "nothing was submitted" in down.err
    assert "Traceback" not in down.err
    assert ledger.read(camp).jobs == ()
    assert (camp / "STATUS.md").read_text() == status_before


def test_authorized_refuses_an_unlisted_backend_and_a_partition_not_on_the_page(  # type: ignore[no-untyped-def]
    camp: Path, run
) -> None:
    elsewhere = run("submit", "manifests/example.yaml", "--backend", "polaris", "--stage", "smoke")
    assert elsewhere.code == 1 and "authorized" in elsewhere.err and "polaris" in elsewhere.err
    (camp / "manifests/big.yaml").write_text(
        "backend: generic-slurm\n"
        'resources: {partition: gpu-huge, time: "00:05:00", mem: 100M}\n'
        "jobs: [{id: big, cmd: 'true'}]\n"
    )
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a partition the page does not list")
    git(camp, "push", "-q")
    refused = run("submit", "manifests/big.yaml", "--stage", "smoke")
    # The page decides it, so check says it first (MAN018, as `campaign check` does; exit 2
    # like every MAN finding at submit); the authorized gate applies the same rule.
    assert refused.code == 2 and "MAN018" in refused.err and "gpu-huge" in refused.err
    assert "backends/generic-slurm.md" in refused.err  # where to look, or to add it
    assert ledger.read(camp).jobs == ()
