"""A walltime through `campaign submit` on the local backend: one meaning, checked before
anything runs, enforced as written (the real-Slurm story: tests/runner/test_submit_walltime_slurm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaignops.model import ledger
from tests import waiting
from tests.conftest import git

MANIFEST = """\
backend: local
resources: {time: %s}
jobs:
  - id: nap
    cmd: sleep 30
"""


@pytest.fixture
def camp(demo: Path) -> Path:
    return demo


def commit_manifest(root: Path, limit: str) -> str:
    """A committed manifest whose limit is ``limit`` exactly as written in the YAML."""
    (root / "manifests/nap.yaml").write_text(MANIFEST % limit)
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"nap with time {limit}")
    return "manifests/nap.yaml"


def test_hours_minutes_is_rendered_in_three_fields(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    preview = run("submit", commit_manifest(camp, '"00:20"'), "--stage", "smoke", "--dry-run")
    assert preview.code == 0, preview.err
    assert "#LOCAL --time=00:20:00\n" in preview.out


def test_a_limit_in_seconds_ends_the_task_timeout(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    submitted = run("submit", commit_manifest(camp, '"00:00:02"'), "--stage", "smoke")
    assert submitted.code == 0, submitted.err
    job = waiting.settled(run, camp, want={"TIMEOUT", "COMPLETED", "FAILED"}, timeout=60)
    assert job.state == "TIMEOUT", job.record


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        # Refused by the schema (MAN001), in words, at the value's line and column.
        (
            '"00:60"',
            "manifests/nap.yaml:2:19: MAN001 resources.time: '00:60' is not in the form: "
            "Walltime: HH:MM (hours:minutes),",
        ),
        ("12:00:00", "manifests/nap.yaml:2:19: MAN001 resources.time: 43200 is not of type"),
        # Well shaped, refused by the walltime model.
        ('"0"', "resources.time '0' is zero\n  hint: leave time out"),
        ('"400-00:00"', "resources.time '400-00:00' is over 365 days\n  hint: no backend"),
    ],
)
def test_a_bad_limit_is_exit_2_and_nothing_is_recorded(  # type: ignore[no-untyped-def]
    camp: Path, run, limit: str, message: str
) -> None:
    result = run("submit", commit_manifest(camp, limit), "--stage", "smoke")
    assert result.code == 2 and message in result.err, result.err
    assert ledger.read(camp).jobs == ()
