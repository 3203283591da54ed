"""The git facts the committed gate needs, read in one place (GitPython): the only I/O of the gates."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RepoFacts:
    """What the committed gate needs of git; paths are relative to the campaign root."""

    is_repo: bool
    head: str | None = None  # None: no commit yet
    branch: str | None = None  # None: detached HEAD
    tracked: frozenset[str] = frozenset()  # of the paths asked about, those in HEAD
    dirty: frozenset[str] = frozenset()  # tracked files differing from HEAD (index or tree)
    untracked: frozenset[str] = frozenset()  # neither tracked nor ignored
    upstream: str | None = None  # e.g. origin/main
    upstream_contains_head: bool | None = None  # None: no upstream configured


def repo_facts(root: Path, paths: Iterable[str]) -> RepoFacts:
    """Read what the committed gate needs from git (GitPython), for ``paths`` relative to the
    campaign root. The remote-tracking branch is taken as last fetched or pushed: no network."""
    import git  # GitPython's import is slow: only pay for it when submitting

    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return RepoFacts(is_repo=False)
    if repo.working_tree_dir is None:
        return RepoFacts(is_repo=False)
    top = Path(repo.working_tree_dir).resolve()
    prefix = root.resolve().relative_to(top).as_posix()
    lead = "" if prefix == "." else prefix + "/"

    def inside(top_rel: str) -> str | None:
        return top_rel[len(lead) :] if top_rel.startswith(lead) else None

    # Porcelain v1 with -z: "XY path\0", paths relative to the top; no renames, so one field.
    status = repo.git.status(
        "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", str(top / prefix)
    )
    dirty: set[str] = set()
    untracked: set[str] = set()
    for entry in status.split("\0"):
        rel = inside(entry[3:]) if len(entry) > 3 else None
        if rel is not None:
            (untracked if entry[:2] == "??" else dirty).add(rel)
    if not repo.head.is_valid():
        return RepoFacts(is_repo=True, dirty=frozenset(dirty), untracked=frozenset(untracked))
    head = repo.head.commit
    tracked = set()
    for rel in paths:
        try:
            head.tree / (lead + rel)
        except KeyError:
            continue
        tracked.add(rel)
    branch = upstream = None
    contains: bool | None = None
    if not repo.head.is_detached:
        branch = repo.active_branch.name
        remote = repo.active_branch.tracking_branch()
        if remote is not None:
            upstream = remote.name
            try:
                repo.git.merge_base("--is-ancestor", head.hexsha, remote.path)
                contains = True
            except git.GitCommandError:  # exit 1: not an ancestor; 128: ref never fetched
                contains = False
    return RepoFacts(
        is_repo=True,
        head=head.hexsha,
        branch=branch,
        tracked=frozenset(tracked),
        dirty=frozenset(dirty),
        untracked=frozenset(untracked),
        upstream=upstream,
        upstream_contains_head=contains,
    )
