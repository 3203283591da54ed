"""A commit's campaign as a directory: what `campaign review` reads at each side of a change.

Both sides come from git's object store, never from the working tree: ``git ls-tree`` lists
the commit's files and one ``git cat-file --batch`` writes each blob's bytes as committed.
Not ``git archive``: it applies ``export-ignore`` and ``export-subst`` attributes, so a tree it
writes can differ from the commit the reviewer is asked about. Symlinks are written as
symlinks (the checks judge them); submodules are left out (they are other repositories).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from campaignops.core.errors import GitError, UsageError

_HINT = "fetch the base branch first (e.g. git fetch origin main) or pass a commit"


@dataclass(frozen=True)
class Repo:
    """Where the campaign is: the repository's top and the campaign's prefix inside it."""

    top: Path
    prefix: str  # "" when the campaign is the repository's top


def _git(cwd: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=False)
    except OSError as exc:
        raise UsageError(
            message=f"cannot run git: {exc.strerror}",
            hint="campaign review reads both sides of a change from git: install git",
        ) from None


def repo_of(root: Path) -> Repo:
    done = _git(root, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise GitError(
            message=f"{root} is not inside a git repository",
            hint="campaign review compares two commits: run it inside the campaign's clone",
        )
    top = Path(done.stdout.decode("utf-8", "surrogateescape").strip())
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    return Repo(top=top, prefix="" if prefix == "." else prefix)


def commit(repo: Repo, ref: str) -> str:
    """The commit ``ref`` names; GitError (exit 2) when it names none."""
    if ref.startswith("-") or not ref.strip():
        raise GitError(message=f"--base {ref!r}: not a commit or ref", hint=_HINT)
    if ref == "HEAD":
        done = _git(repo.top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        if done.returncode != 0:
            raise GitError(
                message="HEAD: no commit yet: there is no change to review",
                hint="commit the change first (campaign review never reads the working tree)",
            )
        return done.stdout.decode().strip()
    done = _git(
        repo.top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
    )
    if done.returncode != 0:
        raise GitError(message=f"--base {ref}: cannot resolve: no such commit or ref", hint=_HINT)
    return done.stdout.decode().strip()


def merge_base(repo: Repo, base: str, head: str) -> str | None:
    """Where HEAD's branch left ``base`` (what a pull request's diff starts from), or None when
    the two histories never meet here (unrelated, or a shallow clone that stops before)."""
    done = _git(repo.top, "merge-base", base, head)
    return done.stdout.decode().strip() if done.returncode == 0 else None


def materialise(repo: Repo, sha: str, dest: Path) -> Path:
    """Write commit ``sha``'s files under ``dest``; return the campaign root inside it."""
    args = ["ls-tree", "-r", "-z", "--full-tree", sha]
    if repo.prefix:
        args += ["--", repo.prefix]
    listed = _git(repo.top, *args)
    if listed.returncode != 0:
        raise GitError(
            message=f"cannot list commit {sha[:12]}: {listed.stderr.decode(errors='replace')}",
            hint="check the repository with git fsck",
        )
    entries: list[tuple[str, str, str]] = []
    for record in listed.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, obj = meta.decode().split()
        rel = os.fsdecode(raw_path)
        # The campaign's own directory committed as a symlink would lead the review outside.
        if kind == "blob" and rel != repo.prefix:
            entries.append((mode, obj, rel))
    blobs = _git(
        repo.top, "cat-file", "--batch", data="".join(f"{o}\n" for _, o, _ in entries).encode()
    )
    out = blobs.stdout
    pos = 0
    for mode, _obj, rel in entries:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        body = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1  # the body is followed by a newline
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            target.symlink_to(os.fsdecode(body))
            continue
        target.write_bytes(body)
        if mode == "100755":
            target.chmod(0o755)
    root = dest / repo.prefix if repo.prefix else dest
    root.mkdir(parents=True, exist_ok=True)
    return root
