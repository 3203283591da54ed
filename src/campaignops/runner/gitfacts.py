"""The git facts the committed gate needs, read in one place: the only I/O of the gates.

The paths a submission names are compared with HEAD byte for byte: each file's blob id is
computed from the working tree's bytes and compared with the id HEAD's tree records. `git
status` alone is not enough: `git update-index --skip-worktree` or `--assume-unchanged` hide
changes from it, and a symlink committed to point outside the repository changes where git
never looks. A bounded number of git calls, whatever the number of paths (a 1,000-line queue):
status, ls-files, ls-tree, and check-ignore only when a path is not in HEAD.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from campaignops.errors import GitError

SKIP_WORKTREE = "skip-worktree"
ASSUME_UNCHANGED = "assume-unchanged"
LINK_MODE = "120000"
MAX_LINKS = 40  # the kernel's own limit on symlinks followed in one path


@dataclass(frozen=True)
class RepoFacts:
    """What the committed gate needs of git; paths are relative to the campaign root."""

    is_repo: bool
    head: str | None = None  # None: no commit yet
    branch: str | None = None  # None: detached HEAD
    tracked: frozenset[str] = frozenset()  # of the paths asked about, those HEAD holds
    # Files differing from HEAD: git status over the campaign, and a byte comparison of the
    # paths asked about (through their symlinks), which index bits cannot hide.
    dirty: frozenset[str] = frozenset()
    untracked: frozenset[str] = frozenset()  # neither tracked nor ignored
    # Ignored or excluded, as git status --ignored=matching lists them (a directory ends in /).
    ignored: frozenset[str] = frozenset()
    # Of the paths asked about and not in HEAD, those git ignores: path -> "source:line: rule".
    rules: Mapping[str, str] = field(default_factory=dict)
    # Files present in the working tree whose index entry hides changes from git status:
    # path -> SKIP_WORKTREE or ASSUME_UNCHANGED.
    flagged: Mapping[str, str] = field(default_factory=dict)
    # Paths asked about that are (or pass through) a symlink leading out of the repository:
    # path -> the link's target as written.
    outside: Mapping[str, str] = field(default_factory=dict)
    upstream: str | None = None  # e.g. origin/main
    upstream_contains_head: bool | None = None  # None: no upstream configured


def _git(top: Path, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
    # Literal pathspecs: a campaign directory named "a*b" is a name, not a pattern (check-ignore
    # reads paths from stdin, and refuses the option).
    literal = [] if args[0] == "check-ignore" else ["--literal-pathspecs"]
    argv = ["git", *literal, "--no-optional-locks", "-C", str(top), *args]
    proc = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    if proc.returncode not in ok:
        raise GitError(
            message=f"git {args[0]} failed in {top}: "
            + os.fsdecode(proc.stderr).strip().replace("\n", " "),
            hint="run it by hand to see why (git fsck if the repository is damaged)",
        )
    return proc.stdout


def _fields(out: bytes) -> list[str]:
    return [os.fsdecode(f) for f in out.split(b"\0") if f]


def blob_id(data: bytes, *, sha256: bool) -> str:
    """The id git gives a blob of ``data`` (the object format's hash of header and bytes)."""
    digest = hashlib.sha256() if sha256 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Route:
    """Where a path leads in the working tree: the symlinks passed and the real path (both
    relative to the top of the repository), or ``escape``, the target that left it."""

    links: tuple[str, ...] = ()
    real: str | None = None
    escape: str | None = None


def route(top: Path, rel: str) -> Route:
    """Follow ``rel`` (relative to ``top``) component by component as the kernel would, without
    leaving ``top``: an absolute target, a ``..`` above the top or a loop is an escape."""
    pending = rel.split("/")[::-1]
    done: list[str] = []
    links: list[str] = []
    target = rel
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return Route(links=tuple(links), escape=target)
            done.pop()
            continue
        done.append(part)
        here = top.joinpath(*done)
        if not here.is_symlink():
            continue
        target = str(here.readlink())
        links.append("/".join(done))
        if target.startswith("/") or len(links) > MAX_LINKS:
            return Route(links=tuple(links), escape=target)
        done.pop()
        pending.extend(reversed(target.split("/")))
    return Route(links=tuple(links), real="/".join(done))


def _same(top: Path, rel: str, entry: tuple[str, str], *, sha256: bool) -> bool:
    """Whether the working tree holds at ``rel`` exactly HEAD's entry (mode kind and bytes)."""
    mode, sha = entry
    here = top / rel
    try:
        if here.is_symlink():
            data, is_link = os.fsencode(here.readlink()), True
        elif here.is_file():
            data, is_link = here.read_bytes(), False
        else:
            return False  # deleted, or a directory now
    except OSError:
        return False
    return (mode == LINK_MODE) == is_link and blob_id(data, sha256=sha256) == sha


def _status(top: Path, spec: str) -> list[tuple[str, str]]:
    # Porcelain v1 with -z: "XY path\0", paths relative to the top; no renames, so one field.
    out = _git(
        top,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--no-renames",
        "--",
        spec,
    )
    return [(e[:2], e[3:]) for e in _fields(out) if len(e) > 3]


def _flags(top: Path, specs: Sequence[str]) -> dict[str, str]:
    """Index entries whose changes git status does not look at ("S": skip-worktree, a
    lowercase tag: assume-unchanged), among files present in the working tree: a sparse
    checkout's skip-worktree files are absent, and hide nothing."""
    out: dict[str, str] = {}
    for entry in _fields(_git(top, "ls-files", "-v", "-z", "--", *specs)):
        tag, rel = entry[:1], entry[2:]
        kind = SKIP_WORKTREE if tag == "S" else ASSUME_UNCHANGED if tag.islower() else None
        if kind and os.path.lexists(top / rel):
            out[rel] = kind
    return out


def _tree(top: Path, specs: Sequence[str]) -> dict[str, tuple[str, str]]:
    """HEAD's entries under ``specs``: path -> (mode, blob id)."""
    out: dict[str, tuple[str, str]] = {}
    for line in _fields(_git(top, "ls-tree", "-r", "-z", "HEAD", "--", *specs)):
        meta, _, rel = line.partition("\t")
        mode, kind, sha = meta.split(" ")
        if kind == "blob":
            out[rel] = (mode, sha)
    return out


def _ignore_rules(top: Path, rels: Sequence[str]) -> dict[str, str]:
    """Of ``rels`` (untracked), those an ignore or exclude rule hides: rel -> "source:line: rule"."""
    if not rels:
        return {}
    data = b"".join(os.fsencode(r) + b"\0" for r in rels)
    # Exit 1: none of them is ignored.
    out = _fields(_git(top, "check-ignore", "-v", "-z", "--stdin", stdin=data, ok=(0, 1)))
    return {
        out[i + 3]: f"{out[i]}:{out[i + 1]}: {out[i + 2]}"
        for i in range(0, len(out) - 3, 4)
        if out[i]  # -v lists a matching negation (!rule) too: then it is not ignored
        and not out[i + 2].startswith("!")
    }


def repo_facts(root: Path, paths: Iterable[str]) -> RepoFacts:
    """Read what the committed gate needs from git, for ``paths`` relative to the campaign
    root. The remote-tracking branch is taken as last fetched or pushed: no network."""
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

    dirty: set[str] = set()
    untracked: set[str] = set()
    ignored: set[str] = set()
    for xy, top_rel in _status(top, prefix):
        rel = inside(top_rel)
        if rel is not None:
            {"??": untracked, "!!": ignored}.get(xy, dirty).add(rel)
    if not repo.head.is_valid():
        return RepoFacts(
            is_repo=True,
            dirty=frozenset(dirty),
            untracked=frozenset(untracked),
            ignored=frozenset(ignored),
        )
    head = repo.head.commit.hexsha
    asked = list(dict.fromkeys(paths))
    routes = {rel: route(top, lead + rel) for rel in asked}
    outside = {rel: r.escape for rel, r in routes.items() if r.escape is not None}
    # What each path reads: every link on its way, and where it ends.
    reads = {rel: (*r.links, r.real) for rel, r in routes.items() if r.escape is None and r.real}
    beyond = sorted({q for qs in reads.values() for q in qs if inside(q) is None})
    specs = [prefix, *beyond]
    tree = _tree(top, specs)
    flags = _flags(top, specs)
    sha256 = len(head) == 64
    tracked: set[str] = set()
    flagged = {rel: kind for q, kind in flags.items() if (rel := inside(q)) is not None}
    for rel, qs in reads.items():
        if not all(q in tree for q in qs):
            continue
        tracked.add(rel)
        if not all(_same(top, q, tree[q], sha256=sha256) for q in qs):
            dirty.add(rel)
        for q in qs:
            if q in flags:
                flagged[rel] = flags[q]
    strays = {routes[rel].real or "": rel for rel in reads if rel not in tracked}
    rules = {strays[q]: rule for q, rule in _ignore_rules(top, sorted(strays)).items()}
    branch = upstream = None
    contains: bool | None = None
    if not repo.head.is_detached:
        branch = repo.active_branch.name
        remote = repo.active_branch.tracking_branch()
        if remote is not None:
            upstream = remote.name
            try:
                repo.git.merge_base("--is-ancestor", head, remote.path)
                contains = True
            except git.GitCommandError:  # exit 1: not an ancestor; 128: ref never fetched
                contains = False
    return RepoFacts(
        is_repo=True,
        head=head,
        branch=branch,
        tracked=frozenset(tracked),
        dirty=frozenset(dirty),
        untracked=frozenset(untracked),
        ignored=frozenset(ignored),
        rules=rules,
        flagged=flagged,
        outside=outside,
        upstream=upstream,
        upstream_contains_head=contains,
    )
