"""The wrapper lock, ``.campaign/wrappers.lock``: which wrapper content a submission used.

One entry per line, ``<path> sha256:<64 hex> <YYYY-MM-DD>``, path relative to the campaign root;
``#`` comments and blank lines are allowed. The file is append-only: an entry, once written, pins
that wrapper's content for good, and a change means a new version (``name.v2.sh``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops.core import journal, layout
from campaignops.core.errors import InputError, LockConflictError, UsageError
from campaignops.core.files import FileReader

HEADER = (
    "# campaignops wrapper lock: the sha256 of every wrapper a submission used.",
    "# Format: <path> sha256:<64 hex> <YYYY-MM-DD>. Append-only: never edit or remove a line.",
    "# To change a locked wrapper, copy it to the next version (name.v2.sh) and lock that.",
)
VERSIONED = re.compile(r"^(?P<name>.+)\.v(?P<n>[1-9][0-9]*)\.(?P<ext>[A-Za-z0-9]+)$")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TRAILING_VERSION = re.compile(r"\.v[0-9]+\Z")


@dataclass(frozen=True)
class LockEntry:
    path: str
    digest: str
    date: dt.date
    line: int

    def render(self) -> str:
        return f"{self.path} {self.digest} {self.date.isoformat()}"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_entry_line(line: str) -> bool:
    """True for lines that hold (or try to hold) an entry: not blank, not a comment."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def entry_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, text)`` of each entry line, a trailing CR dropped (see docs)."""
    return [
        (number, line.removesuffix("\r"))
        for number, line in enumerate(text.split("\n"), start=1)
        if is_entry_line(line)
    ]


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be written as a lock entry path, or None."""
    if not path:
        return "empty path"
    if _CONTROL.search(path):
        return f"path {path!r} contains a control character"
    if path != path.strip():
        return f"path {path!r} has leading or trailing whitespace"
    if path.startswith("#"):
        return f"path {path!r} starts with '#' (it would read as a comment)"
    if path.startswith("/") or "\\" in path:
        return f"path {path!r} is not a relative POSIX path"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"path {path!r} is not normalised (empty, '.' or '..' component)"
    return None


def _parse_line(number: int, line: str) -> tuple[LockEntry | None, str | None]:
    fields = line.rsplit(" ", 2)
    if len(fields) != 3:
        return None, f"expected 3 fields separated by single spaces, got {line!r}"
    path, dig, date_text = fields
    problem = path_problem(path)
    if problem:
        return None, problem
    if not _DIGEST.match(dig):
        return None, f"{dig!r} is not sha256:<64 lowercase hex>"
    if not _DATE.match(date_text):
        return None, f"{date_text!r} is not a date (YYYY-MM-DD)"
    try:
        date = dt.date.fromisoformat(date_text)
    except ValueError:
        return None, f"{date_text!r} is not a valid date"
    return LockEntry(path=path, digest=dig, date=date, line=number), None


def parse(text: str) -> tuple[list[LockEntry], list[tuple[int, str]]]:
    """``(entries, [(line, problem)])``; entries in file order, duplicates included.

    The same path twice with the same digest is harmless (two submissions raced to lock it);
    with different digests the lock contradicts itself, which is a problem at the later line.
    """
    entries: list[LockEntry] = []
    problems: list[tuple[int, str]] = []
    first: dict[str, LockEntry] = {}
    for number, line in entry_lines(text):
        entry, problem = _parse_line(number, line)
        if entry is None:
            problems.append((number, problem or "malformed"))
            continue
        earlier = first.setdefault(entry.path, entry)
        if earlier.digest != entry.digest:
            problems.append(
                (
                    number,
                    f"{entry.path} is locked again with {entry.digest}, but line "
                    f"{earlier.line} locked it as {earlier.digest}",
                )
            )
        entries.append(entry)
    return entries, problems


def by_path(entries: Iterable[LockEntry]) -> dict[str, LockEntry]:
    """The authoritative (first) entry of each path."""
    first: dict[str, LockEntry] = {}
    for entry in entries:
        first.setdefault(entry.path, entry)
    return first


def versioned_suggestion(basename: str) -> str:
    """``<name>.v1.<ext>`` for an unversioned wrapper name (``.sh`` when it has no extension)."""
    stem, dot, ext = basename.rpartition(".")
    if not dot or not stem or not re.fullmatch(r"[A-Za-z0-9]+", ext):
        stem, ext = basename, "sh"
    stem = _TRAILING_VERSION.sub("", stem) or stem
    return f"{stem}.v1.{ext}"


def next_version(rel: str, *, taken: set[str]) -> str:
    """The next free versioned path after ``rel``: neither in ``taken`` (existing or locked)."""
    directory, _, basename = rel.rpartition("/")
    match = VERSIONED.match(basename)
    if match:
        name, n, ext = match["name"], int(match["n"]) + 1, match["ext"]
    else:
        first = VERSIONED.match(versioned_suggestion(basename))
        assert first is not None
        name, n, ext = first["name"], 1, first["ext"]
    while True:
        candidate = f"{directory}/{name}.v{n}.{ext}" if directory else f"{name}.v{n}.{ext}"
        if candidate not in taken:
            return candidate
        n += 1


def read(root: Path) -> str:
    """The lock file's text ("" when there is none yet); refuses one that is not UTF-8 text."""
    lines, torn = journal.read_lines(root / layout.LOCK_FILE)
    text = "\n".join(lines) + ("\n" if lines else "") + (torn or "")
    return text.removeprefix("\ufeff")


def _lock_path(root: Path) -> Path:
    if not (root / layout.POLICY_FILE).is_file():
        raise UsageError(
            message=f"no {layout.POLICY_FILE} in {root}: not a campaign",
            hint="run campaign lock inside a campaign repository",
        )
    lock_path = root / layout.LOCK_FILE
    if lock_path.is_symlink() or (lock_path.exists() and not lock_path.is_file()):
        raise InputError(
            path=layout.LOCK_FILE,
            message="not a regular file",
            hint="the lock must be a plain file in the repository; restore it from git",
        )
    return lock_path


def _entries(text: str) -> list[LockEntry]:
    entries, problems = parse(text)
    if problems:
        line, problem = problems[0]
        raise InputError(
            path=f"{layout.LOCK_FILE}:{line}",
            message=f"malformed lock line: {problem}",
            hint="restore the lock from git (campaign check --select WRAP lists every problem)",
        )
    return entries


def _wrapper_bytes(reader: FileReader, root: Path, rel: str) -> bytes:
    """The content of a wrapper that may be locked; refuses a path or name that may not."""
    if not os.path.lexists(root / rel):
        raise InputError(path=rel, message="no such file", hint="check the path")
    data = reader.read_bytes(rel)
    if data is None:
        raise reader.problems[rel]
    unfit = path_problem(rel)
    if unfit:
        raise InputError(path=rel, message=f"cannot be locked: {unfit}", hint="rename it")
    directory, _, basename = rel.rpartition("/")
    if not VERSIONED.match(basename):
        renamed = f"{directory}/" * bool(directory) + versioned_suggestion(basename)
        raise UsageError(
            message=f"{rel}: wrapper name has no version; expected <name>.v<N>.<ext>",
            hint=f"rename it (git mv {rel} {renamed}), then lock {renamed}",
        )
    return data


def _conflict(
    root: Path, rel: str, existing: LockEntry, current: str, taken: set[str]
) -> LockConflictError:
    nxt = next_version(rel, taken=taken | set(layout.walk(root)))
    return LockConflictError(
        message=f"{rel} is locked (line {existing.line}, {existing.date.isoformat()}) "
        f"as {existing.digest}, but its content is now {current}",
        hint=f"a locked wrapper never changes: copy it to {nxt} (cp {rel} {nxt}), "
        f"restore the original (git checkout -- {rel}), and point new queues at {nxt}",
    )


def lock(
    *, root: Path, paths: Sequence[str], cwd: Path, today: dt.date | None = None
) -> list[LockEntry]:
    """Lock each wrapper's current content; return its entry (new or existing) in argument order.

    Idempotent for unchanged wrappers. A wrapper locked with other content raises
    LockConflictError: locked content is immutable, so the change must become a new version.
    """
    root = root.resolve()
    lock_path = _lock_path(root)
    date = today or dt.date.today()
    text = read(root)
    locked = by_path(_entries(text))
    reader = FileReader(root)
    # Numbering follows the file as it will be after the append (a torn end gets its newline).
    next_line = text.count("\n") + (0 if text.endswith("\n") or not text else 1) + 1
    new_lines: list[str] = [] if text else list(HEADER)
    next_line += len(new_lines)
    result: list[LockEntry] = []
    for raw in paths:
        rel = layout.root_relative(
            raw, root=root, cwd=cwd, hint="lock wrappers inside the campaign repository"
        )
        current = digest(_wrapper_bytes(reader, root, rel))
        existing = locked.get(rel)
        if existing is None:
            existing = LockEntry(path=rel, digest=current, date=date, line=next_line)
            locked[rel] = existing
            new_lines.append(existing.render())
            next_line += 1
        elif existing.digest != current:
            raise _conflict(root, rel, existing, current, set(locked))
        result.append(existing)
    if len(new_lines) > (0 if text else len(HEADER)):
        journal.append_lines(lock_path, new_lines)
    return result
