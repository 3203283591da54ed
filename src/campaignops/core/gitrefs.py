"""Reading files as they were at a git ref, for the append-only rules (``--base REF``).

Plain git commands (core/gitcli.py), a few milliseconds each: GitPython's import alone was ~90 ms
of CPU, paid by every commit's hook (``campaign check --base HEAD``) (docs/decisions.md 194).
"""

from __future__ import annotations

from pathlib import Path

from campaignops.core import gitcli
from campaignops.core.errors import GitError


def _top(root: Path) -> Path:
    top = gitcli.toplevel(root)
    if top is None:
        raise GitError(
            message=f"{root} is not inside a git repository",
            hint="--base needs a git repository; drop --base or run inside the repository",
        )
    return top


def _commit(top: Path, ref: str) -> str:
    """The id of the commit ``ref`` names. A date older than the reflog (``HEAD@{yesterday}``
    the day a clone was made) names no commit here: git would answer with the oldest entry."""
    # No ref name starts or ends with white space: "$(git rev-parse HEAD)" from a program that
    # kept the newline names the commit, as it did with GitPython.
    name = f"{ref.strip()}^{{commit}}"
    proc = gitcli.call(top, "rev-parse", "--verify", "--end-of-options", name)
    if proc.returncode != 0 or b"only goes back to" in proc.stderr:
        raise GitError(
            message=f"--base {ref}: cannot resolve base: no such commit or ref",
            hint="fetch the base branch first (e.g. git fetch origin main) or pass a commit",
        )
    return proc.stdout.decode("ascii").strip()


def unborn_head(root: Path) -> bool:
    """True when ``root`` is in a git repository with no commit yet (HEAD names no commit)."""
    try:
        inside = gitcli.call(root, "rev-parse", "--git-dir")
        done = gitcli.call(root, "rev-parse", "--verify", "--quiet", "HEAD")
    except OSError:  # no git here: then no repository either
        return False
    return inside.returncode == 0 and done.returncode != 0


def show(root: Path, *, ref: str, rel: str) -> bytes | None:
    """Contents of ``rel`` (relative to the campaign root) at ``ref``; None if no file is there."""
    top = _top(root)
    commit = _commit(top, ref)
    path = (root.resolve() / rel).relative_to(top).as_posix()
    for entry in gitcli.fields(gitcli.run(top, "ls-tree", "-z", commit, "--", path)):
        meta, _, name = entry.partition("\t")
        _mode, kind, sha = meta.split()
        if name == path and kind == "blob":
            return gitcli.run(top, "cat-file", "blob", sha)
    return None


def list_files(root: Path, *, ref: str) -> list[str]:
    """Every file path at ``ref`` under the campaign root, relative to that root."""
    top = _top(root)
    commit = _commit(top, ref)
    prefix = root.resolve().relative_to(top).as_posix()
    whole = prefix in ("", ".")
    out: list[str] = []
    listing = gitcli.run(top, "ls-tree", "-r", "-z", commit, "--", *([] if whole else [prefix]))
    for entry in gitcli.fields(listing):
        meta, _, p = entry.partition("\t")
        if meta.split()[1] != "blob":
            continue
        if whole:
            out.append(p)
        elif p.startswith(prefix + "/"):
            out.append(p[len(prefix) + 1 :])
    return sorted(out)


def _fork_point(top: Path, commit: str) -> str:
    """Where HEAD's history left ``commit``'s (their merge base): what a pull request's own
    changes are measured from, as the forge's diff shows them, so files changed on the base
    branch since do not count as the branch's. ``commit`` itself when there is none to find
    (a shallow clone, no HEAD yet)."""
    proc = gitcli.call(top, "merge-base", commit, "HEAD")
    bases = proc.stdout.decode("ascii").split() if proc.returncode == 0 else []
    return bases[0] if bases else commit


def changed_files(root: Path, *, ref: str) -> frozenset[str]:
    """Files under the campaign root that a change since ``ref`` touches: those whose content
    differs between the fork point of ``ref`` and HEAD (``ref`` itself when HEAD descends
    from it: a commit's HEAD, a push's before-SHA) and the index or the working tree, and
    untracked ones (ignored files excluded), relative to the campaign root. Deleted files
    are left out: there is nothing left to check in them."""
    top = _top(root)
    commit = _fork_point(top, _commit(top, ref))
    prefix = root.resolve().relative_to(top).as_posix()
    untracked = gitcli.run(top, "ls-files", "--others", "--exclude-standard", "-z")
    paths: set[str] = set(gitcli.fields(untracked))
    # Against the working tree and against the index: a file staged and then restored in the
    # work tree is still part of the commit being made. Renames count as the new path only.
    for against in ((), ("--cached",)):
        diff = ("diff", *against, "--name-only", "-z", "--no-renames", "--diff-filter=d")
        out = gitcli.run(top, *diff, "--no-ext-diff", "--no-relative", commit, "--")
        paths.update(gitcli.fields(out))
    if prefix in ("", "."):
        return frozenset(paths)
    return frozenset(p[len(prefix) + 1 :] for p in paths if p.startswith(prefix + "/"))
