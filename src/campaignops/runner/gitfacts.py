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
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from campaignops.core import gitcli
from campaignops.core.route import route
from campaignops.runner import gitcalls

SKIP_WORKTREE = "skip-worktree"
ASSUME_UNCHANGED = "assume-unchanged"
LINK_MODE = "120000"
# A Git LFS pointer: HEAD holds this text, the working tree the content it names by sha256.
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1\n"
POINTER_MAX = 1024  # git-lfs's own limit on what it reads as a pointer


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
    # Of the ignored entries, those no rule in HEAD hides: path -> "source:line: rule".
    local_rules: Mapping[str, str] = field(default_factory=dict)
    # Files present in the working tree whose index entry hides changes from git status:
    # path -> SKIP_WORKTREE or ASSUME_UNCHANGED.
    flagged: Mapping[str, str] = field(default_factory=dict)
    # Of the dirty paths asked about, those git status calls clean: git converts them on the
    # way in (line endings, a clean filter), so the job would run bytes no commit holds.
    converted: frozenset[str] = frozenset()
    # The others git status calls clean: changed with their size and time kept (status trusts
    # them; so does git add, until the file is touched).
    unseen: frozenset[str] = frozenset()
    # Paths asked about that are (or pass through) a symlink leading out of the repository:
    # path -> (that symlink, relative to the campaign root; its target as written).
    outside: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    upstream: str | None = None  # e.g. origin/main
    upstream_contains_head: bool | None = None  # None: no upstream configured
    # The repository's remotes by name: none on a fresh `campaign new`, so "push" has nowhere
    # to go until one is added.
    remotes: tuple[str, ...] = ()


def blob_id(data: bytes, *, sha256: bool) -> str:
    """The id git gives a blob of ``data`` (the object format's hash of header and bytes)."""
    digest = hashlib.sha256() if sha256 else hashlib.sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _read(here: Path) -> tuple[bytes, bool] | None:
    """The bytes at ``here`` and whether it is a symlink (its target's text), or None."""
    try:
        if here.is_symlink():
            return os.fsencode(here.readlink()), True
        if here.is_file():
            return here.read_bytes(), False
    except OSError:
        pass
    return None  # deleted, or a directory now


def _same(top: Path, rel: str, entry: gitcalls.Entry, *, sha256: bool) -> bool:
    """Whether the working tree holds at ``rel`` exactly HEAD's entry (mode kind and bytes)."""
    found = _read(top / rel)
    if found is None:
        return False
    data, is_link = found
    return (entry.mode == LINK_MODE) == is_link and blob_id(data, sha256=sha256) == entry.sha


def _pointers(top: Path, entries: Iterable[gitcalls.Entry]) -> dict[str, tuple[str, int]]:
    """Of small blobs, the Git LFS pointers: blob id -> (content sha256, size). One call."""
    shas = sorted({e.sha for e in entries if e.size <= POINTER_MAX})
    if not shas:
        return {}
    out = gitcli.run(top, "cat-file", "--batch", stdin="".join(s + "\n" for s in shas).encode())
    found: dict[str, tuple[str, int]] = {}
    at = 0
    while at < len(out):
        header, _, rest = out[at:].partition(b"\n")
        sha, _, size = header.decode().rpartition(" ")
        if not size.isdigit():  # "<id> missing": HEAD's own blobs never are
            break
        body = rest[: int(size)]
        at += len(header) + 1 + int(size) + 1
        if not body.startswith(LFS_POINTER):
            continue
        keys = dict(line.split(" ", 1) for line in body.decode().splitlines()[1:] if " " in line)
        oid, count = keys.get("oid", ""), keys.get("size", "")
        if oid.startswith("sha256:") and count.isdigit():
            found[sha.split(" ")[0]] = (oid[len("sha256:") :], int(count))
    return found


def _lfs_same(top: Path, rel: str, pointer: tuple[str, int]) -> bool:
    """Whether the working tree holds at ``rel`` the content an LFS pointer names."""
    found = _read(top / rel)
    if found is None or found[1]:
        return False
    oid, size = pointer
    return len(found[0]) == size and hashlib.sha256(found[0]).hexdigest() == oid


def _converted(
    top: Path, quiet: Mapping[str, Sequence[str]], tree: Mapping[str, gitcalls.Entry]
) -> frozenset[str]:
    """Of the paths whose files differ from HEAD while git status is silent, those git's own
    conversion (line endings, a clean filter) turns into HEAD's blob. The others changed with
    their size and time kept, which status trusts. One call, only when there are any."""
    files = sorted({q for qs in quiet.values() for q in qs if "\n" not in q})  # one a line
    if not files:
        return frozenset()
    data = b"".join(os.fsencode(q) + b"\n" for q in files)
    ids = gitcli.run(top, "hash-object", "--stdin-paths", stdin=data).decode().split()
    stored = dict(zip(files, ids, strict=True))
    return frozenset(
        rel for rel, qs in quiet.items() if all(stored.get(q) == tree[q].sha for q in qs)
    )


def _flags(top: Path, specs: Sequence[str]) -> dict[str, str]:
    """Index entries whose changes git status does not look at ("S": skip-worktree, a
    lowercase tag: assume-unchanged)."""
    out: dict[str, str] = {}
    for entry in gitcli.fields(gitcli.run(top, "ls-files", "-v", "-z", "--", *specs)):
        tag, rel = entry[:1], entry[2:]
        kind = SKIP_WORKTREE if tag == "S" else ASSUME_UNCHANGED if tag.islower() else None
        if kind:
            out[rel] = kind
    return out


def _hiding(top: Path, rel: str, kind: str) -> bool:
    # A sparse checkout's skip-worktree files are absent: they hide nothing. An absent file
    # marked assume-unchanged hides its deletion.
    return kind == ASSUME_UNCHANGED or os.path.lexists(top / rel)


@dataclass(frozen=True)
class _Checkout:
    """Where the campaign sits in its repository's working tree."""

    top: Path
    prefix: str  # the campaign directory relative to ``top`` ("." at the top)

    @property
    def lead(self) -> str:
        return "" if self.prefix == "." else self.prefix + "/"

    def inside(self, top_rel: str) -> str | None:
        """A path relative to the top as the campaign names it, or None (outside it)."""
        lead = self.lead
        return top_rel[len(lead) :] if top_rel.startswith(lead) else None


def _listed(co: _Checkout) -> tuple[set[str], set[str], set[str]]:
    """What git status lists in the campaign: changed, untracked, ignored."""
    dirty: set[str] = set()
    untracked: set[str] = set()
    ignored: set[str] = set()
    for xy, top_rel in gitcalls.status(co.top, co.prefix):
        rel = co.inside(top_rel)
        if rel is not None:
            {"??": untracked, "!!": ignored}.get(xy, dirty).add(rel)
    return dirty, untracked, ignored


def _same_bytes(
    co: _Checkout,
    reads: Mapping[str, tuple[str, ...]],
    tree: Mapping[str, gitcalls.Entry],
    sha256: bool,
) -> dict[str, bool]:
    """Of every file the paths read, whether the working tree holds HEAD's blob there."""
    compared = {q for qs in reads.values() for q in qs}
    same = {q: _same(co.top, q, tree[q], sha256=sha256) for q in compared}
    # A blob that differs may be an LFS pointer to exactly these bytes: one more call, if any.
    pointers = _pointers(co.top, (tree[q] for q, ok in same.items() if not ok))
    for q, ok in same.items():
        if not ok and tree[q].sha in pointers:
            same[q] = _lfs_same(co.top, q, pointers[tree[q].sha])
    return same


def _differing(
    co: _Checkout,
    reads: Mapping[str, tuple[str, ...]],
    same: Mapping[str, bool],
    flags: Mapping[str, str],
    flagged: dict[str, str],
    listed: set[str],
) -> tuple[set[str], dict[str, list[str]]]:
    """The paths (all tracked) whose files differ from HEAD, and of those, the ones git status
    is silent about: rel -> the files that differ. Adds each path's index bits to ``flagged``."""
    dirty: set[str] = set()
    quiet: dict[str, list[str]] = {}
    for rel in sorted(reads):
        qs = reads[rel]
        for q in qs:
            if q in flags:
                flagged[rel] = flags[q]
        if all(same[q] for q in qs):
            continue
        dirty.add(rel)
        if rel not in flagged and all(
            (c := co.inside(q)) is not None and c not in listed and os.path.lexists(co.top / q)
            for q in qs
        ):
            quiet[rel] = [q for q in qs if not same[q]]
    return dirty, quiet


def _config(top: Path, key: str) -> str | None:
    proc = gitcli.call(top, "config", "--get", key)  # exit 1: not set
    return os.fsdecode(proc.stdout).rstrip("\n") if proc.returncode == 0 else None


def _upstream(top: Path, head: str) -> tuple[str | None, str | None, bool | None]:
    """The branch, its upstream, and whether the upstream (as last fetched) holds HEAD. The
    upstream is the branch's configured remote and merge ref, ``<remote>/<branch>``, whether
    or not it was ever fetched (then it does not hold HEAD)."""
    symbolic = gitcli.call(top, "symbolic-ref", "-q", "HEAD")
    if symbolic.returncode != 0:  # detached
        return None, None, None
    branch = os.fsdecode(symbolic.stdout).strip().removeprefix("refs/heads/")
    remote = _config(top, f"branch.{branch}.remote")
    merge = _config(top, f"branch.{branch}.merge") if remote is not None else None
    if remote is None or merge is None:
        return branch, None, None
    upstream = f"{remote}/{merge.removeprefix('refs/heads/')}"
    # exit 1: not an ancestor; 128: the ref was never fetched
    held = gitcli.call(top, "merge-base", "--is-ancestor", head, f"refs/remotes/{upstream}")
    return branch, upstream, held.returncode == 0


def _open(root: Path) -> _Checkout | None:
    """Where the campaign sits in the working tree holding it; None: in none (no repository,
    or a bare one)."""
    top = gitcli.toplevel(root)
    if top is None:
        return None
    return _Checkout(top=top, prefix=root.resolve().relative_to(top).as_posix())


def repo_facts(root: Path, paths: Iterable[str]) -> RepoFacts:
    """Read what the committed gate needs from git, for ``paths`` relative to the campaign
    root. The remote-tracking branch is taken as last fetched or pushed: no network."""
    co = _open(root)
    if co is None:
        return RepoFacts(is_repo=False)
    dirty, untracked, ignored = _listed(co)
    resolved = gitcli.call(co.top, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    if resolved.returncode != 0:  # no commit yet (or HEAD names a missing one)
        return RepoFacts(
            is_repo=True,
            dirty=frozenset(dirty),
            untracked=frozenset(untracked),
            ignored=frozenset(ignored),
        )
    head = resolved.stdout.decode("ascii").strip()
    routes = {rel: route(co.top, co.lead + rel) for rel in dict.fromkeys(paths)}
    outside = {
        rel: (posixpath.relpath(r.links[-1], co.prefix) if r.links else rel, r.escape)
        for rel, r in routes.items()
        if r.escape is not None
    }
    # What each path reads: every link on its way, and where it ends.
    reads = {rel: (*r.links, r.real) for rel, r in routes.items() if r.escape is None and r.real}
    specs = [co.prefix, *sorted({q for qs in reads.values() for q in qs if co.inside(q) is None})]
    tree = gitcalls.tree(co.top, specs)
    flags = _flags(co.top, specs)
    # Any file of the campaign whose index bit hides a change; any bit on a path asked about.
    flagged = {
        rel: kind
        for q, kind in flags.items()
        if (rel := co.inside(q)) is not None and _hiding(co.top, q, kind)
    }
    held = {rel: qs for rel, qs in reads.items() if all(q in tree for q in qs)}
    same = _same_bytes(co, held, tree, sha256=len(head) == 64)
    changed, quiet = _differing(co, held, same, flags, flagged, listed=set(dirty))
    converted = _converted(co.top, quiet, tree)
    strays = {routes[rel].real or "": rel for rel in reads if rel not in held}
    rules = {strays[q]: rule for q, rule in gitcalls.ignore_rules(co.top, sorted(strays)).items()}
    branch, upstream, contains = _upstream(co.top, head)
    return RepoFacts(
        is_repo=True,
        head=head,
        branch=branch,
        tracked=frozenset(held),
        dirty=frozenset(dirty | changed),
        untracked=frozenset(untracked),
        ignored=frozenset(ignored),
        rules=rules,
        flagged=flagged,
        converted=converted,
        unseen=frozenset(quiet) - converted,
        outside=outside,
        local_rules=gitcalls.local_rules(co.top, co.lead, sorted(ignored)) if ignored else {},
        upstream=upstream,
        upstream_contains_head=contains,
        remotes=tuple(sorted(os.fsdecode(gitcli.run(co.top, "remote")).split())),
    )
