"""Reading files as they were at a git ref, for the append-only rules (``--base REF``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from campaignops.core.errors import GitError


def _repo(root: Path):  # type: ignore[no-untyped-def]
    import git  # GitPython's import is slow: only pay for it when --base is used

    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(
            message=f"{root} is not inside a git repository",
            hint="--base needs a git repository; drop --base or run inside the repository",
        ) from None


def _commit(repo, ref: str):  # type: ignore[no-untyped-def]
    try:
        return repo.commit(ref)
    # GitPython's rev_parse raises more than its own errors for odd revisions: IndexError for
    # a reflog entry past the end (main@{1000}), NotImplementedError for HEAD@{yesterday},
    # ValueError, KeyError … A user's --base is parsed here, so none may escape as a traceback.
    except Exception:
        raise GitError(
            message=f"--base {ref}: cannot resolve base: no such commit or ref",
            hint="fetch the base branch first (e.g. git fetch origin main) or pass a commit",
        ) from None


def unborn_head(root: Path) -> bool:
    """True when ``root`` is in a git repository with no commit yet (HEAD names no commit)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=root,
            capture_output=True,
            timeout=30,
        )
        inside = subprocess.run(
            ["git", "rev-parse", "--git-dir"], cwd=root, capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return inside.returncode == 0 and done.returncode != 0


def show(root: Path, *, ref: str, rel: str) -> bytes | None:
    """Contents of ``rel`` (relative to the campaign root) at ``ref``; None if absent there."""
    repo = _repo(root)
    commit = _commit(repo, ref)
    top = Path(repo.working_tree_dir or root).resolve()
    path = (root.resolve() / rel).relative_to(top).as_posix()
    try:
        blob = commit.tree / path
    except KeyError:
        return None
    data: bytes = blob.data_stream.read()
    return data


def list_files(root: Path, *, ref: str) -> list[str]:
    """Every file path at ``ref`` under the campaign root, relative to that root."""
    repo = _repo(root)
    commit = _commit(repo, ref)
    top = Path(repo.working_tree_dir or root).resolve()
    prefix = root.resolve().relative_to(top).as_posix()
    out: list[str] = []
    for item in commit.tree.traverse():
        if item.type != "blob":
            continue
        p = str(item.path)
        if prefix in ("", "."):
            out.append(p)
        elif p.startswith(prefix + "/"):
            out.append(p[len(prefix) + 1 :])
    return sorted(out)


def _fork_point(repo: Any, commit: Any) -> Any:
    """Where HEAD's history left ``commit``'s (their merge base): what a pull request's own
    changes are measured from, as the forge's diff shows them, so files changed on the base
    branch since do not count as the branch's. ``commit`` itself when there is none to find
    (a shallow clone, no HEAD yet)."""
    try:
        bases = repo.merge_base(commit, repo.head.commit)
    except Exception:  # GitCommandError, ValueError on an unborn HEAD: keep the ref itself
        return commit
    return bases[0] if bases else commit


def changed_files(root: Path, *, ref: str) -> frozenset[str]:
    """Files under the campaign root that a change since ``ref`` touches: those whose content
    differs between the fork point of ``ref`` and HEAD (``ref`` itself when HEAD descends
    from it: a commit's HEAD, a push's before-SHA) and the index or the working tree, and
    untracked ones (ignored files excluded), relative to the campaign root. Deleted files
    are left out: there is nothing left to check in them."""
    import git

    repo = _repo(root)
    commit = _fork_point(repo, _commit(repo, ref))
    top = Path(repo.working_tree_dir or root).resolve()
    prefix = root.resolve().relative_to(top).as_posix()
    paths: set[str] = set(repo.untracked_files)
    # ``diff(None)`` compares with the working tree, ``diff(INDEX)`` with the index: a file
    # staged and then restored in the work tree is still part of the commit being made.
    for against in (None, git.INDEX):
        for change in commit.diff(against):
            if change.b_path and not change.deleted_file:
                paths.add(str(change.b_path))
    if prefix in ("", "."):
        return frozenset(paths)
    return frozenset(p[len(prefix) + 1 :] for p in paths if p.startswith(prefix + "/"))
