"""WRAP: versioned wrapper names, locked wrappers immutable, the lock append-only."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from campaignops.checks.wrappers import base_changes
from tests.conftest import git

LOCK = ".campaign/wrappers.lock"
WRAPPER = "scripts/run_one.v1.sh"
HEX = "0123456789abcdef" * 4


def sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def lock_line_of(root: Path, rel: str) -> int:
    lines = (root / LOCK).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(f"{rel} "))


def wrap(run, *args: str):  # type: ignore[no-untyped-def]
    return run("check", "--select", "WRAP", "--format", "json", *args)


def test_clean_fixture_is_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert not (campaign / LOCK).exists()  # nothing locked yet: nothing to compare
    result = wrap(run)
    assert result.code == 0, result.out + result.err
    assert result.json()["findings"] == []


def test_freshly_locked_wrappers_are_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("lock", WRAPPER, "scripts/run_queue.v1.sh", "--today", "2026-11-21").code == 0
    result = wrap(run)
    assert result.code == 0, result.out + result.err


def test_edited_locked_wrapper_is_wrap002(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    locked = sha(campaign / WRAPPER)
    with (campaign / WRAPPER).open("a", encoding="utf-8") as fh:
        fh.write("echo edited in place\n")
    result = wrap(run)
    assert result.code == 1
    assert result.where() == [(WRAPPER, 1, "WRAP002")]
    finding = result.json()["findings"][0]
    assert locked in str(finding["message"])
    assert sha(campaign / WRAPPER) in str(finding["message"])
    assert "scripts/run_one.v2.sh" in str(finding["hint"])

    # The next *free* version: an existing v2 (even unlocked) is skipped.
    (campaign / "scripts/run_one.v2.sh").write_text("#!/bin/bash\n", encoding="utf-8")
    hint = str(wrap(run).json()["findings"][0]["hint"])
    assert "scripts/run_one.v3.sh" in hint and "v2" not in hint

    text = run("check", "--select", "WRAP")
    assert text.code == 1
    assert f"{WRAPPER}:1:1: WRAP002" in text.out


def test_edited_wrapper_found_whichever_paths_are_passed(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    (campaign / WRAPPER).write_text("#!/bin/bash\necho replaced\n", encoding="utf-8")
    result = wrap(run, "campaign.yaml")
    assert result.where() == [(WRAPPER, 1, "WRAP002")]


def test_deleted_locked_wrapper_is_wrap003_at_its_lock_line(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", "scripts/run_queue.v1.sh", WRAPPER, "--today", "2026-11-21")
    line = lock_line_of(campaign, WRAPPER)
    (campaign / WRAPPER).unlink()
    # As pre-commit would run it: the deleted file is not among the paths passed.
    for args in ((), ("scripts/run_queue.v1.sh",)):
        result = wrap(run, *args)
        assert result.code == 1
        assert result.where() == [(LOCK, line, "WRAP003")]
        assert WRAPPER in str(result.json()["findings"][0]["message"])


def test_unversioned_wrapper_is_wrap001(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "scripts/helper.sh").write_text("#!/bin/bash\n", encoding="utf-8")
    (campaign / "scripts/run_one.v0.sh").write_text("#!/bin/bash\n", encoding="utf-8")
    result = wrap(run)
    assert result.code == 1
    assert result.where() == [
        ("scripts/helper.sh", 1, "WRAP001"),
        ("scripts/run_one.v0.sh", 1, "WRAP001"),
    ]
    hints = [str(f["hint"]) for f in result.json()["findings"]]
    assert "scripts/helper.v1.sh" in hints[0]
    assert "scripts/run_one.v1.sh" in hints[1]
    assert wrap(run, "scripts/helper.sh").where() == [("scripts/helper.sh", 1, "WRAP001")]


def test_malformed_lock_lines_are_wrap005_at_their_line(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    good = f"{WRAPPER} {sha(campaign / WRAPPER)} 2026-11-21"
    (campaign / LOCK).write_text(
        "# lock\n"
        f"{good}\n"
        "\n"
        f"scripts/run_queue.v1.sh sha256:{HEX} not-a-date\n"
        "garbage\n"
        f"{WRAPPER} sha256:{HEX} 2026-11-22\n",
        encoding="utf-8",
    )
    result = wrap(run)
    assert result.code == 1
    assert result.where() == [(LOCK, 4, "WRAP005"), (LOCK, 5, "WRAP005"), (LOCK, 6, "WRAP005")]


def test_lock_base_ref_catches_rewrites_and_removals_not_appends(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("lock", WRAPPER, "scripts/run_queue.v1.sh", "--today", "2026-11-21").code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lock wrappers")
    original = (repo / LOCK).read_text(encoding="utf-8")
    one_line = lock_line_of(repo, WRAPPER)
    assert wrap(run, "--base", "HEAD").code == 0

    # Rewritten entry: reported at its line, as 'changed'.
    (repo / LOCK).write_text(original.replace(sha(repo / WRAPPER), f"sha256:{HEX}"), "utf-8")
    result = wrap(run, "--base", "HEAD")
    assert (LOCK, one_line, "WRAP004") in result.where()
    messages = [str(f["message"]) for f in result.json()["findings"] if f["id"] == "WRAP004"]
    assert len(messages) == 1 and "changed" in messages[0] and WRAPPER in messages[0]

    # Removed entry: reported at line 1, as 'removed'.
    kept = [line for line in original.splitlines(keepends=True) if not line.startswith(WRAPPER)]
    (repo / LOCK).write_text("".join(kept), encoding="utf-8")
    result = wrap(run, "--base", "HEAD")
    assert result.code == 1
    assert result.where() == [(LOCK, 1, "WRAP004")]
    assert "removed" in str(result.json()["findings"][0]["message"])

    # An append (also via a new comment) is fine.
    (repo / LOCK).write_text(original, encoding="utf-8")
    (repo / "scripts/run_one.v2.sh").write_text("#!/bin/bash\necho v2\n", encoding="utf-8")
    assert run("lock", "scripts/run_one.v2.sh", "--today", "2026-11-22").code == 0
    with (repo / LOCK).open("a", encoding="utf-8") as fh:
        fh.write("# a note\n")
    result = wrap(run, "--base", "HEAD")
    assert result.code == 0, result.out
    assert result.json()["findings"] == []


def test_lock_removed_entirely_since_base(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lock")
    (repo / LOCK).unlink()
    result = wrap(run, "--base", "HEAD")
    # The entry is gone (WRAP004); the wrapper itself is no longer protected, which is the point.
    assert result.where() == [(LOCK, 1, "WRAP004")]


def test_base_without_a_lock_is_silent(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    run("lock", WRAPPER, "--today", "2026-11-21")
    result = wrap(run, "--base", "HEAD")
    assert result.code == 0, result.out


def test_unknown_base_ref_exits_2(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check", "--select", "WRAP", "--base", "no-such-ref")
    assert result.code == 2
    assert "no-such-ref" in result.err
    assert "Traceback" not in result.err


def test_base_outside_git_exits_2(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check", "--select", "WRAP", "--base", "HEAD")
    assert result.code == 2
    assert "not inside a git repository" in result.err


def test_lock_symlinked_out_of_the_campaign_is_unreadable(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    outside = campaign.parent / "evil.lock"
    outside.write_text(f"scripts/x.v1.sh sha256:{HEX} 2026-01-01\n", encoding="utf-8")
    (campaign / ".campaign").mkdir(exist_ok=True)
    (campaign / LOCK).symlink_to(outside)
    result = run("check", "--select", "WRAP")
    assert result.code == 2
    assert "outside the campaign" in result.err


@pytest.mark.parametrize(
    ("before", "now", "expected"),
    [
        (["a", "b"], ["a", "b", "c"], []),
        (["a", "b"], ["a", "x"], [("changed", "b", 1)]),
        (["a", "b", "c"], ["a", "c"], [("removed", "b", None)]),
        (["a", "b"], [], [("removed", "a", None), ("removed", "b", None)]),
        # Union-merged clones: one side's new entries land before the other's.
        (["a", "b"], ["a", "n", "b"], []),
        (["a"], ["n", "a", "m"], []),
        (["a", "b"], ["b", "a"], [("moved", "b", 0)]),
        (["a", "b"], ["a", "x", "y"], [("changed", "b", 1)]),
    ],
)
def test_base_changes(before: list[str], now: list[str], expected: list[object]) -> None:
    assert base_changes(before, now) == expected
