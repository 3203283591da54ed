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
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from campaignops.core.errors import GitError
from campaignops.core.route import route

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


def _git(top: Path, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
    # Literal pathspecs: a campaign directory named "a*b" is a name, not a pattern (check-ignore
    # reads paths from stdin, and refuses the option).
    literal = [] if args[0] == "check-ignore" else ["--literal-pathspecs"]
    # HEAD's own objects: a local `git replace` would show another tree under HEAD's id, one
    # no clone holds (refs/replace/ is not pushed by default).
    argv = ["git", *literal, "--no-replace-objects", "--no-optional-locks", "-C", str(top), *args]
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
class Entry:
    """A blob in HEAD's tree."""

    mode: str
    sha: str
    size: int


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


def _same(top: Path, rel: str, entry: Entry, *, sha256: bool) -> bool:
    """Whether the working tree holds at ``rel`` exactly HEAD's entry (mode kind and bytes)."""
    found = _read(top / rel)
    if found is None:
        return False
    data, is_link = found
    return (entry.mode == LINK_MODE) == is_link and blob_id(data, sha256=sha256) == entry.sha


def _pointers(top: Path, entries: Iterable[Entry]) -> dict[str, tuple[str, int]]:
    """Of small blobs, the Git LFS pointers: blob id -> (content sha256, size). One call."""
    shas = sorted({e.sha for e in entries if e.size <= POINTER_MAX})
    if not shas:
        return {}
    out = _git(top, "cat-file", "--batch", stdin="".join(s + "\n" for s in shas).encode())
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
    top: Path, quiet: Mapping[str, Sequence[str]], tree: Mapping[str, Entry]
) -> frozenset[str]:
    """Of the paths whose files differ from HEAD while git status is silent, those git's own
    conversion (line endings, a clean filter) turns into HEAD's blob. The others changed with
    their size and time kept, which status trusts. One call, only when there are any."""
    files = sorted({q for qs in quiet.values() for q in qs if "\n" not in q})  # one a line
    if not files:
        return frozenset()
    data = b"".join(os.fsencode(q) + b"\n" for q in files)
    ids = _git(top, "hash-object", "--stdin-paths", stdin=data).decode().split()
    stored = dict(zip(files, ids, strict=True))
    return frozenset(
        rel for rel, qs in quiet.items() if all(stored.get(q) == tree[q].sha for q in qs)
    )


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
    lowercase tag: assume-unchanged)."""
    out: dict[str, str] = {}
    for entry in _fields(_git(top, "ls-files", "-v", "-z", "--", *specs)):
        tag, rel = entry[:1], entry[2:]
        kind = SKIP_WORKTREE if tag == "S" else ASSUME_UNCHANGED if tag.islower() else None
        if kind:
            out[rel] = kind
    return out


def _hiding(top: Path, rel: str, kind: str) -> bool:
    # A sparse checkout's skip-worktree files are absent: they hide nothing. An absent file
    # marked assume-unchanged hides its deletion.
    return kind == ASSUME_UNCHANGED or os.path.lexists(top / rel)


def _tree(top: Path, specs: Sequence[str]) -> dict[str, Entry]:
    """HEAD's blobs under ``specs``, by path."""
    out: dict[str, Entry] = {}
    for line in _fields(_git(top, "ls-tree", "-r", "-l", "-z", "HEAD", "--", *specs)):
        meta, _, rel = line.partition("\t")
        mode, kind, sha, size = meta.split()  # the size is right-aligned: split on any run
        if kind == "blob":
            out[rel] = Entry(mode=mode, sha=sha, size=int(size))
    return out


def _rule_sources(top: Path, rels: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """Of ``rels`` (untracked), those an ignore or exclude rule hides: rel -> (source, line,
    rule), the source as git names it (a .gitignore relative to the top, .git/info/exclude, or
    core.excludesFile's path)."""
    if not rels:
        return {}
    data = b"".join(os.fsencode(r) + b"\0" for r in rels)
    # Exit 1: none of them is ignored.
    out = _fields(_git(top, "check-ignore", "-v", "-z", "--stdin", stdin=data, ok=(0, 1)))
    return {
        out[i + 3]: (out[i], out[i + 1], out[i + 2])
        for i in range(0, len(out) - 3, 4)
        if out[i]  # -v lists a matching negation (!rule) too: then it is not ignored
        and not out[i + 2].startswith("!")
    }


def _ignore_rules(top: Path, rels: Sequence[str]) -> dict[str, str]:
    """Of ``rels`` (untracked), those an ignore or exclude rule hides: rel -> "source:line: rule"."""
    return {rel: f"{s}:{n}: {r}" for rel, (s, n, r) in _rule_sources(top, rels).items()}


def _local_rules(top: Path, lead: str, ignored: Iterable[str]) -> dict[str, str]:
    """Of the ignored entries (campaign-relative), those only a rule outside HEAD hides
    (.git/info/exclude, core.excludesFile, a .gitignore HEAD does not hold): rel -> "source:
    line: rule". A committed .gitignore is the campaign's own word that a path is no source
    (an output, a cache, a credential); a rule only this clone has is not. Two calls at most."""
    found = _rule_sources(top, [lead + rel for rel in ignored])
    # Only a .gitignore inside the repository can be in HEAD (core.excludesFile may name a path
    # outside it, which ls-tree would refuse).
    sources = sorted(
        {
            s
            for s, _, _ in found.values()
            if posixpath.basename(s) == ".gitignore"
            and not posixpath.isabs(s)
            and ".." not in s.split("/")
        }
    )
    listing = _git(top, "ls-tree", "-z", "--name-only", "HEAD", "--", *sources) if sources else b""
    held = set(_fields(listing))
    return {q[len(lead) :]: f"{s}:{n}: {r}" for q, (s, n, r) in found.items() if s not in held}


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
    outside = {
        rel: (posixpath.relpath(r.links[-1], prefix) if r.links else rel, r.escape)
        for rel, r in routes.items()
        if r.escape is not None
    }
    # What each path reads: every link on its way, and where it ends.
    reads = {rel: (*r.links, r.real) for rel, r in routes.items() if r.escape is None and r.real}
    beyond = sorted({q for qs in reads.values() for q in qs if inside(q) is None})
    specs = [prefix, *beyond]
    tree = _tree(top, specs)
    flags = _flags(top, specs)
    sha256 = len(head) == 64
    # Any file of the campaign whose index bit hides a change; any bit on a path asked about.
    flagged = {
        rel: kind
        for q, kind in flags.items()
        if (rel := inside(q)) is not None and _hiding(top, q, kind)
    }
    tracked = {rel for rel, qs in reads.items() if all(q in tree for q in qs)}
    compared = {q for rel in tracked for q in reads[rel]}
    same = {q: _same(top, q, tree[q], sha256=sha256) for q in compared}
    # A blob that differs may be an LFS pointer to exactly these bytes: one more call, if any.
    pointers = _pointers(top, (tree[q] for q, ok in same.items() if not ok))
    for q, ok in same.items():
        if not ok and tree[q].sha in pointers:
            same[q] = _lfs_same(top, q, pointers[tree[q].sha])
    listed = set(dirty)  # what git status says, before the byte comparison adds to it
    quiet: dict[str, list[str]] = {}  # differing although status is silent: rel -> files
    for rel in sorted(tracked):
        qs = reads[rel]
        for q in qs:
            if q in flags:
                flagged[rel] = flags[q]
        if all(same[q] for q in qs):
            continue
        dirty.add(rel)
        if rel not in flagged and all(
            (c := inside(q)) is not None and c not in listed and os.path.lexists(top / q)
            for q in qs
        ):
            quiet[rel] = [q for q in qs if not same[q]]
    converted = _converted(top, quiet, tree)
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
        converted=converted,
        unseen=frozenset(quiet) - converted,
        outside=outside,
        local_rules=_local_rules(top, lead, sorted(ignored)) if ignored else {},
        upstream=upstream,
        upstream_contains_head=contains,
        remotes=tuple(sorted(r.name for r in repo.remotes)),
    )
