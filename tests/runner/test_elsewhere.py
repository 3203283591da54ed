"""Another clone's local job (issue 20): after clone B merges clone A's ledger, A's unfinished
local job reads as "on another machine" in B, not PENDING forever; `status --watch` in B does
not wait for it; no_sibling names it rather than saying nothing is queued. In A it is A's own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from campaignops.model import ledger
from campaignops.runner import elsewhere
from tests.conftest import git


def _clone(source: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(where)], check=True, capture_output=True)
    return where


def test_a_local_job_of_another_clone_reads_as_on_another_machine(  # type: ignore[no-untyped-def]
    demo: Path, run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit")
    assert sent.code == 0, sent.err
    job_id = ledger.read(demo).jobs[-1].job_id
    assert job_id is not None and git(demo, "status", "--porcelain") == ""
    other = _clone(demo, tmp_path / "clone-b")
    monkeypatch.chdir(other)
    # B holds A's job as A committed it: submitted, not ended.
    assert ledger.read(other).jobs[-1].state not in ("COMPLETED",)
    assert [j.job_id for j in elsewhere.of(other, ledger.read(other).jobs)] == [job_id]
    shown = run("status")
    assert shown.code == 0, shown.err
    row = next(line for line in shown.out.splitlines() if line.startswith(job_id))
    assert "on another machine" in row and "PENDING" not in row, shown.out
    assert "1 job(s) on another machine" in shown.err
    watched = run("status", "--watch")  # would wait forever for a job it cannot see end
    assert watched.code == 0 and watched.err.count(", 0 job(s) unfinished") == 1, watched.err
    dry = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    sibling = next(line for line in dry.out.splitlines() if "gate no_sibling" in line)
    assert (
        "pass" in sibling and f"another clone to its machine's local backend: {job_id}" in sibling
    )
    # In A, the clone that ran it, the job is its own: never "on another machine".
    monkeypatch.chdir(demo)
    assert elsewhere.of(demo, ledger.read(demo).jobs) == ()
