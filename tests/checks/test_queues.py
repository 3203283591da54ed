"""QUEUE checks through the real CLI: planted defects at exact (path, line, id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git

EXAMPLE = "queues/example.txt"
# The clean fixture's queue, line by line: a comment, then the cells 'baseline' and 'no_aug'.
ORIGINAL = (
    "# <cfg_path> <task> [epochs]\n"
    "configs/baseline.yaml reconstruction 20\n"
    "configs/no_aug.yaml segmentation\n"
)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())


def test_clean_fixture_is_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert (campaign / EXAMPLE).read_text() == ORIGINAL
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.code == 0, result.out + result.err
    assert result.json()["findings"] == []


def test_clean_fixture_is_silent_against_its_own_commit(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.out + result.err
    assert result.json()["findings"] == []


def test_malformed_lines(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(
        campaign,
        "queues/bad.txt",
        "configs/baseline.yaml reconstruction 20 extra\n"  # 1: too many fields
        "configs/no_aug.yaml\tsegmentation\n"  # 2: a TAB is not a separator
        "# fine\n"
        "configs/baseline.yaml detection -5\n"  # 4: epochs not a positive integer
        "/abs/configs/x.yaml detection\n"  # 5: absolute path
        "configs/../../x.yaml detection\n"  # 6: '..'
        "configs/baseline.yaml detection 0\n"  # 7: epochs zero
        "configs/no_aug.yaml detection # later\n",  # 8: trailing comment
    )
    result = run("check", "--select", "QUEUE001", "--format", "json")
    assert result.code == 1
    found = [(f["line"], f["col"]) for f in result.json()["findings"]]
    assert found == [(1, 41), (2, 20), (4, 33), (5, 1), (6, 1), (7, 33), (8, 31)]
    assert set(result.where()) == {("queues/bad.txt", n, "QUEUE001") for n in (1, 2, 4, 5, 6, 7, 8)}


def test_crlf_is_left_to_eol(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, EXAMPLE, ORIGINAL.replace("\n", "\r\n"))
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.code == 0, result.out


def test_missing_config(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, EXAMPLE, ORIGINAL + "configs/typo.yaml detection 50\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.where() == [(EXAMPLE, 4, "QUEUE002")]
    assert "configs/typo.yaml" in result.out


def test_config_that_is_a_directory_or_leaves_the_campaign(
    campaign: Path, run, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("a: 1\n")
    (campaign / "configs" / "linked.yaml").symlink_to(outside)
    (campaign / "configs" / "dangling.yaml").symlink_to(campaign / "configs" / "gone.yaml")
    (campaign / "configs" / "loop.yaml").symlink_to("loop.yaml")
    write(
        campaign,
        EXAMPLE,
        ORIGINAL
        + "configs linked\nconfigs/linked.yaml det\nconfigs/dangling.yaml det\nconfigs/loop.yaml det\n",
    )
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.where() == [(EXAMPLE, n, "QUEUE002") for n in (4, 5, 6, 7)]
    messages = [f["message"] for f in result.json()["findings"]]
    assert "not a file" in str(messages[0])
    assert "outside the campaign" in str(messages[1])
    assert "dangling" in str(messages[2])
    assert "loops or leads outside" in str(messages[3])


def test_duplicate_name_within_one_file(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "configs/det/baseline.yaml", "a: 1\n")
    write(campaign, EXAMPLE, ORIGINAL + "configs/det/baseline.yaml detection 50\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.where() == [(EXAMPLE, 4, "QUEUE003")]
    assert f"{EXAMPLE}:2" in result.out


@pytest.mark.parametrize("second", ["queues/z_more.txt", "queues/a_more.txt"])
def test_duplicate_name_across_files_when_one_file_is_passed(
    campaign: Path, run, second: str
) -> None:  # type: ignore[no-untyped-def]
    # The new file is the only PATH (as pre-commit passes it); it collides with example.txt
    # whether it sorts after it (z_) or before it (a_).
    write(campaign, second, "configs/no_aug.yaml detection 50\n")
    result = run("check", "--select", "QUEUE", "--format", "json", second)
    assert result.where() == [(second, 1, "QUEUE003")]
    assert f"{EXAMPLE}:3" in result.out


def test_duplicate_reported_only_in_files_being_checked(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, "queues/z_more.txt", "configs/no_aug.yaml detection 50\n")
    result = run("check", "--select", "QUEUE", "--format", "json", "configs/baseline.yaml")
    assert result.code == 0, result.out
    everything = run("check", "--select", "QUEUE", "--format", "json")
    assert everything.where() == [("queues/z_more.txt", 1, "QUEUE003")]


def test_commented_out_cell_does_not_collide(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(campaign, EXAMPLE, ORIGINAL.replace("configs/no_aug", "# configs/no_aug"))
    write(campaign, "queues/retry.txt", "configs/no_aug.yaml segmentation\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.code == 0, result.out


def test_policy_globs_choose_the_queue_files(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    policy = campaign / "campaign.yaml"
    policy.write_text(policy.read_text() + "paths:\n  queues: runs/*.queue\n")
    write(campaign, "runs/one.queue", "configs/missing.yaml detection\n")
    result = run("check", "--select", "QUEUE", "--format", "json")
    assert result.where() == [("runs/one.queue", 1, "QUEUE002")]


# --- append-only, against a base commit ------------------------------------------------------

ALLOWED = {
    "append a comment and a blank line": ORIGINAL + "# appended later\n\n",
    "comment out in place": ORIGINAL.replace("configs/baseline", "# configs/baseline"),
    "comment out without a space": ORIGINAL.replace("configs/no_aug", "#configs/no_aug"),
}


@pytest.mark.parametrize("name", list(ALLOWED))
def test_allowed_changes_since_base(repo: Path, run, name: str) -> None:  # type: ignore[no-untyped-def]
    write(repo, EXAMPLE, ALLOWED[name])
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.out + result.err


def test_append_a_cell_since_base(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(repo, "configs/extra.yaml", "a: 1\n")
    write(repo, EXAMPLE, ORIGINAL + "configs/extra.yaml detection 50\n")
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.out + result.err


def test_append_after_a_base_without_final_newline(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(repo, EXAMPLE, ORIGINAL.rstrip("\n"))
    git(repo, "commit", "-q", "-am", "no final newline")
    write(repo, EXAMPLE, ORIGINAL + "# more\n")
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.out + result.err


FORBIDDEN = {
    "edit": (ORIGINAL.replace("reconstruction 20", "reconstruction 30"), 2, "line 2 was changed"),
    "delete": (ORIGINAL.replace("configs/baseline.yaml reconstruction 20\n", ""), 2, "deleted"),
    "delete the last line": (ORIGINAL.rsplit("configs/no_aug", 1)[0], 2, "deleted"),
    "reorder": (
        "# <cfg_path> <task> [epochs]\n"
        "configs/no_aug.yaml segmentation\n"
        "configs/baseline.yaml reconstruction 20\n",
        2,
        "reordered",
    ),
    "insert": (
        ORIGINAL.replace("configs/no_aug", "# inserted\nconfigs/no_aug"),
        3,
        "inserted at line 3",
    ),
}


@pytest.mark.parametrize("name", list(FORBIDDEN))
def test_forbidden_changes_since_base(repo: Path, run, name: str) -> None:  # type: ignore[no-untyped-def]
    text, line, words = FORBIDDEN[name]
    write(repo, EXAMPLE, text)
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 1
    assert result.where() == [(EXAMPLE, line, "QUEUE004")]
    finding = result.json()["findings"][0]
    assert words in str(finding["message"])
    assert f"git checkout HEAD -- {EXAMPLE}" in str(finding["hint"])
    explicit = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json", EXAMPLE)
    assert explicit.where() == [(EXAMPLE, line, "QUEUE004")]


def test_deleted_queue_file_since_base(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    (repo / EXAMPLE).unlink()
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.where() == [(EXAMPLE, 1, "QUEUE004")]
    assert "deleted" in result.out


def test_new_queue_file_since_base_is_fine(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(repo, "queues/wave2.txt", "# wave 2\n")
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 0, result.out + result.err


def test_base_compares_with_the_committed_text_not_the_working_tree(repo: Path, run) -> None:  # type: ignore[no-untyped-def]
    write(repo, EXAMPLE, ORIGINAL.replace("20", "30"))
    git(repo, "commit", "-q", "-am", "edit")
    clean = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert clean.code == 0, clean.out
    edited = run("check", "--select", "QUEUE", "--base", "HEAD~1", "--format", "json")
    assert edited.where() == [(EXAMPLE, 2, "QUEUE004")]


def test_base_outside_git_is_a_usage_error(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check", "--select", "QUEUE", "--base", "HEAD", "--format", "json")
    assert result.code == 2
    assert "not inside a git repository" in result.err
