"""Story: two clones of one campaign each submit a smoke, then one pulls the other.

Real git (clone, commit through `campaign submit --commit`, pull with a merge), real local jobs.
The campaign's .gitattributes merges the ledger and STATUS.md by union, so the pull never
conflicts; the job ids of the two clones differ though both counters start at 1; STATUS.md's
generated blocks are out of date after the merge until `campaign render`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.model import ledger, ledger_index, ledger_snapshot
from tests import waiting
from tests.conftest import TODAY, git

RECORDS = (".campaign/ledger.jsonl", "STATUS.md")


@pytest.fixture
def clones(tmp_path: Path, new_campaign: Callable[..., Path]) -> Iterator[tuple[Path, Path]]:
    new_campaign("demo", "require_pushed=no")
    for name in ("alice", "bob"):
        git(tmp_path, "clone", "-q", "demo", name)
    yield tmp_path / "alice", tmp_path / "bob"
    for root in (tmp_path / "alice", tmp_path / "bob"):
        state = root / ".campaign/local"
        for job_id in localstate.list_jobs(state):
            subprocess.run(local.cancel_argv([job_id], state_root=str(state)), check=False)


def smoke(run, root: Path, monkeypatch: pytest.MonkeyPatch) -> ledger.Job:  # type: ignore[no-untyped-def]
    """Submit the example smoke from ``root`` with --commit; wait until it completed."""
    monkeypatch.chdir(root)
    done = run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit")
    assert done.code == 0, done.err
    job = waiting.settled(run, root, want={"COMPLETED"}, timeout=60)
    git(root, "commit", "-qm", "smoke completed", "--", *RECORDS)
    return job


def test_two_clones_merge_without_conflict_and_render_repairs_status(  # type: ignore[no-untyped-def]
    clones: tuple[Path, Path], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = clones
    # Every read keeps a snapshot and its per-target index (in each clone's .git), as a big
    # ledger's would: the merge must not be read through bob's stale one.
    monkeypatch.setattr(ledger_snapshot, "SNAPSHOT_AFTER", 1)
    first = smoke(run, alice, monkeypatch)
    second = smoke(run, bob, monkeypatch)
    # Both counters started at 1 in their own .campaign/local; the ids still differ.
    assert (
        localstate.job_number(str(first.job_id)) == localstate.job_number(str(second.job_id)) == 1
    )
    assert first.job_id != second.job_id

    pulled = subprocess.run(
        ["git", "-c", "user.name=Bob", "-c", "user.email=bob@example.org", "pull", "-q",
         "--no-rebase", "--no-edit", str(alice), "HEAD"],
        cwd=bob, capture_output=True, text=True,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert git(bob, "status", "--porcelain", "--untracked-files=no") == ""
    assert len(git(bob, "rev-list", "--merges", "HEAD").split()) == 1  # a real merge

    merged = ledger.read(bob)
    assert merged.skipped == ()
    assert {j.ledger_id: (j.job_id, j.state) for j in merged.jobs} == {
        first.ledger_id: (first.job_id, "COMPLETED"),
        second.ledger_id: (second.job_id, "COMPLETED"),
    }
    for job in (first, second):
        assert (bob / f".campaign/jobs/{job.ledger_id}.sh").is_file()
    # The index read with the merged ledger is the one its records make.
    rebuilt = ledger_index.Index.build(merged.jobs)
    assert merged.index is not None and merged.index.counts == rebuilt.counts == {
        ("smoke", "COMPLETED"): 2
    }
    assert sorted(merged.index.targets()) == sorted(rebuilt.targets())
    for target in rebuilt.targets():
        assert merged.index.latest(target, "smoke") == rebuilt.latest(target, "smoke")
        assert merged.index.smoked(target, None) == rebuilt.smoked(target, None) is not None

    monkeypatch.chdir(bob)
    stale = run("check", "--select", "VIEW", "--format", "json")
    assert stale.code == 1
    assert {(path, code) for path, _, code in stale.where()} == {("STATUS.md", "VIEW001")}
    hints = {str(f["hint"]) for f in stale.json()["findings"]}
    assert all("run campaign render (also after a merge" in h for h in hints)
    assert run("render").code == 0
    assert run("check", "--select", "VIEW").code == 0
    status = (bob / "STATUS.md").read_text()
    assert str(first.job_id) in status and str(second.job_id) in status


def _pull(into: Path, source: Path) -> None:
    pulled = subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.org", "pull", "-q",
         "--no-rebase", "--no-edit", str(source), "HEAD"],
        cwd=into, capture_output=True, text=True,
    )  # fmt: skip
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr


def test_a_refresh_in_one_clone_never_overwrites_the_others_local_job(  # type: ignore[no-untyped-def]
    clones: tuple[Path, Path], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = clones
    monkeypatch.chdir(alice)
    assert run("submit", "manifests/example.yaml", "--stage", "smoke", "--commit").code == 0
    (mine,) = ledger.read(alice).jobs  # committed while PENDING
    _pull(bob, alice)
    # Bob's executor has never heard of Alice's local job: his refresh must not record that.
    monkeypatch.chdir(bob)
    assert run("status", "--refresh").code == 0
    assert ledger.read(bob).by_id[mine.ledger_id].state == "PENDING"
    git(bob, "commit", "-qm", "bob's refresh", "--allow-empty", "--", *RECORDS)
    monkeypatch.chdir(alice)
    waiting.settled(run, alice, want={"COMPLETED"}, ledger_id=mine.ledger_id, timeout=60)
    git(alice, "commit", "-qm", "smoke completed", "--", *RECORDS)
    _pull(alice, bob)
    assert ledger.read(alice).by_id[mine.ledger_id].state == "COMPLETED"


def _lock_and_learn(run, root: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A new wrapper locked and a lesson added in ``root``, committed: what each clone does."""
    monkeypatch.chdir(root)
    wrapper = root / f"scripts/{name}.v1.sh"
    wrapper.write_text(f"#!/usr/bin/env bash\necho {name}\n", encoding="utf-8")
    assert run("lock", f"scripts/{name}.v1.sh").code == 0
    lesson = run(
        "lesson", "add", f"{name}'s job failed", f"{name} fixed it", "--entry", "new",
        "--today", TODAY.isoformat(),
    )  # fmt: skip
    assert lesson.code == 0, lesson.err
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"{name}: a wrapper locked, a lesson learned")


def test_two_clones_merge_the_wrappers_lock_and_the_lessons_without_conflict(  # type: ignore[no-untyped-def]
    clones: tuple[Path, Path], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = clones
    # Round 1: neither clone has a lock yet (both create it); round 2: both append to it.
    for round_ in (1, 2):
        _lock_and_learn(run, alice, f"alice{round_}", monkeypatch)
        _lock_and_learn(run, bob, f"bob{round_}", monkeypatch)
        alice_head = git(alice, "rev-parse", "HEAD")
        _pull(bob, alice)
        assert git(bob, "status", "--porcelain") == ""  # no conflict
        _pull(alice, bob)
        monkeypatch.chdir(bob)
        lock = (bob / ".campaign/wrappers.lock").read_text(encoding="utf-8")
        lessons = (bob / "LESSONS.md").read_text(encoding="utf-8")
        for n in range(1, round_ + 1):
            for name in (f"alice{n}", f"bob{n}"):
                assert lock.count(f"scripts/{name}.v1.sh sha256:") == 1, lock
                assert lessons.count(f"· {name}'s job failed ·") == 1, lessons
        assert lock.count("# campaignops wrapper lock") == 1  # one header, not two
        full = run("check")
        assert (full.code, full.out) == (0, ""), full.out + full.err
        # The merged branch as a pull request against Alice's side: nothing "inserted".
        against = run("check", "--base", alice_head)
        assert (against.code, against.out) == (0, ""), against.out + against.err
