"""review_tree: a commit's campaign written out from git's objects (real git, temp repos)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from campaignops.core.errors import GitError
from campaignops.gitops.review import tree as review_tree
from tests.conftest import FIXTURES, git


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A repository whose campaign lives in ``camp/``, with one commit on main."""
    top = tmp_path / "repo"
    shutil.copytree(FIXTURES / "clean", top / "camp", symlinks=True)
    (top / "README.md").write_text("outside the campaign\n", encoding="utf-8")
    (top / "camp/.gitattributes").write_text(
        "scripts/** export-ignore\nSTATUS.md export-subst\n", encoding="utf-8"
    )
    (top / "camp/STATUS.md").write_text("$Format:%H$\n", encoding="utf-8")
    (top / "camp/link.yaml").symlink_to("configs/baseline.yaml")
    (top / "camp/scripts/run_one.v1.sh").chmod(0o755)
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "campaign")
    return top


def test_the_commit_is_written_byte_for_byte_whatever_the_attributes_and_worktree(
    nested: Path, tmp_path: Path
) -> None:
    committed = (nested / "camp/campaign.yaml").read_bytes()
    (nested / "camp/campaign.yaml").write_text("uncommitted\n", encoding="utf-8")
    repo = review_tree.repo_of(nested / "camp")
    assert repo.prefix == "camp"
    root = review_tree.materialise(repo, review_tree.commit(repo, "HEAD"), tmp_path / "out")
    assert root == tmp_path / "out/camp"
    assert (root / "campaign.yaml").read_bytes() == committed
    # git archive would drop export-ignore files and expand $Format$: the review must not.
    assert (root / "scripts/run_one.v1.sh").read_bytes() == (
        FIXTURES / "clean/scripts/run_one.v1.sh"
    ).read_bytes()
    assert os.access(root / "scripts/run_one.v1.sh", os.X_OK)
    assert (root / "STATUS.md").read_text(encoding="utf-8") == "$Format:%H$\n"
    assert (root / "link.yaml").readlink() == Path("configs/baseline.yaml")
    assert not (tmp_path / "out/README.md").exists()  # outside the campaign: not written
    assert sorted(p.name for p in root.iterdir()) == sorted(
        p.name for p in (nested / "camp").iterdir()
    )


def test_a_ref_that_names_no_commit_is_a_git_error(nested: Path) -> None:
    repo = review_tree.repo_of(nested)
    for ref in ("no-such-branch", "--output=/tmp/x", "", "HEAD~5"):
        with pytest.raises(GitError) as caught:
            review_tree.commit(repo, ref)
        assert caught.value.exit_code == 2


def test_outside_a_repository_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="not inside a git repository"):
        review_tree.repo_of(tmp_path)


def test_the_base_is_where_the_branch_left_it(nested: Path) -> None:
    repo = review_tree.repo_of(nested)
    fork = review_tree.commit(repo, "HEAD")
    git(nested, "checkout", "-qb", "feature")
    git(nested, "commit", "-qm", "feature work", "--allow-empty")
    git(nested, "checkout", "-q", "main")
    git(nested, "commit", "-qm", "main moved on", "--allow-empty")
    git(nested, "checkout", "-q", "feature")
    head = review_tree.commit(repo, "HEAD")
    main = review_tree.commit(repo, "main")
    assert main != fork
    assert review_tree.merge_base(repo, main, head) == fork
    git(nested, "checkout", "-q", "--orphan", "unrelated")
    git(nested, "commit", "-qm", "another history")
    other = review_tree.commit(repo, "HEAD")
    assert review_tree.merge_base(repo, main, other) is None


def test_a_base_without_the_campaign_is_exit_2(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    git(top, "commit", "-qm", "empty", "--allow-empty")
    shutil.copytree(FIXTURES / "clean", top, dirs_exist_ok=True, symlinks=True)
    git(top, "add", "-A")
    git(top, "commit", "-qm", "campaign")
    monkeypatch.chdir(top)
    done = run("review", "--base", "HEAD~1")
    assert done.code == 2
    assert "has no campaign.yaml: not a campaign at that commit" in done.err


def test_a_campaign_directory_committed_as_a_symlink_is_not_followed(
    nested: Path, tmp_path: Path
) -> None:
    repo = review_tree.repo_of(nested / "camp")
    shutil.rmtree(nested / "camp")
    (nested / "camp").symlink_to(tmp_path)
    git(nested, "add", "-A")
    git(nested, "commit", "-qm", "camp is a link now")
    root = review_tree.materialise(repo, review_tree.commit(repo, "HEAD"), tmp_path / "out")
    assert root == tmp_path / "out/camp"
    assert not root.is_symlink()
    assert list(root.iterdir()) == []


def test_a_repository_without_a_commit_has_nothing_to_review(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    repo = review_tree.repo_of(tmp_path)
    with pytest.raises(GitError, match="HEAD: no commit yet"):
        review_tree.commit(repo, "HEAD")
