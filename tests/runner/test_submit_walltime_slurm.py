"""A manifest's walltime through ``campaign submit`` on the real Slurm cluster, read back from
slurmctld (``scontrol show job``): HH:MM is hours:minutes there too, never sbatch's MM:SS."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from campaignops.model import ledger
from campaignops.runner.submit import JOBS_DIR
from tests import waiting
from tests.conftest import git

pytestmark = pytest.mark.slurm

# The smoke asks for 00:20 (20 minutes; sbatch would read a bare "00:20" as 20 seconds and
# keep a 1-minute limit), production for a day and change, with seconds.
MANIFEST = """\
backend: generic-slurm
resources: {time: "1-02:03:04", mem: 10M}
smoke:
  resources: {time: "00:20"}
jobs:
  - id: w1
    cmd: 'true'
"""


@pytest.fixture
def camp(tmp_path: Path, new_campaign, monkeypatch, slurm_cluster) -> Path:  # type: ignore[no-untyped-def]
    root = new_campaign("wt", "backends=generic-slurm,local")
    (root / "manifests/limits.yaml").write_text(MANIFEST)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a manifest with walltimes")
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(upstream))
    git(root, "remote", "add", "origin", str(upstream))
    git(root, "push", "-q", "-u", "origin", "main")
    monkeypatch.chdir(root)
    return root


def time_limit(job_id: str) -> str:
    """slurmctld's own record of the job's limit."""
    shown = subprocess.run(
        ["scontrol", "show", "job", job_id], capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"\bTimeLimit=(\S+)", shown)
    assert found, shown
    return found[1]


def settle(run, root: Path) -> ledger.Job:  # type: ignore[no-untyped-def]
    """The newest job once it has ended (tests/waiting.py)."""
    ended = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL"}
    return waiting.settled(run, root, want=ended, timeout=120)


def test_walltimes_reach_slurmctld_as_the_manifest_means_them(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    argv = ["submit", "manifests/limits.yaml", "--backend", "generic-slurm"]
    preview = run(*argv, "--stage", "smoke", "--dry-run")
    assert preview.code == 0, preview.err
    assert "#SBATCH --time=00:20:00\n" in preview.out
    smoke = run(*argv, "--stage", "smoke")
    assert smoke.code == 0, smoke.err
    smoke_id = str(ledger.read(camp).jobs[-1].record["job_id"])
    assert time_limit(smoke_id) == "00:20:00"
    assert settle(run, camp).state == "COMPLETED"
    git(camp, "commit", "-qam", "smoke done")
    git(camp, "push", "-q")

    production = run(*argv, "--stage", "production")
    assert production.code == 0, production.err
    job_id = str(ledger.read(camp).jobs[-1].record["job_id"])
    assert job_id != smoke_id
    # The script sbatch was given (jobs/<ledger id>.sh) holds the manifest's exact limit.
    ledger_id = ledger.read(camp).jobs[-1].ledger_id
    script = (camp / JOBS_DIR / f"{ledger_id}.sh").read_text(encoding="utf-8")
    assert "#SBATCH --time=1-02:03:04\n" in script
    # Slurm keeps limits in whole minutes and rounds seconds up (sbatch(1), --time): the
    # rendered 1-02:03:04 is enforced as 1-02:04:00.
    assert time_limit(job_id) == "1-02:04:00"
    settle(run, camp)
