"""What `campaign check --fix` may rewrite for the EOL family, and how it writes.

--fix runs on people's working trees (often from a pre-commit hook), so it changes as little as
it can and nothing it cannot take back:

- only files git tracks (``git ls-files``): a gitignored job output or a stray download is not
  the campaign's to rewrite, and a tracked file's previous content is one ``git diff`` away;
- only valid UTF-8 text: a file with NUL bytes or invalid UTF-8 may be binary or another
  encoding, where a CR byte is not a line ending;
- in YAML, never inside a quoted scalar: a CR between quotes is part of the value as written;
- only CRs that end a line (CRLF, or a run of CRs before the LF: CR CR LF is a CRLF file
  converted twice): a lone CR mid-line is data (a progress line, a CR inside a quoted shell
  string) that a line break would change, so it stays and is reported for a manual fix;
- in place, through the same inode (``r+``, write, truncate, fsync), so the file's mode, owner,
  extended attributes and hard links survive (a rename over the file would lose all four).
"""

from __future__ import annotations

import enum
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from campaignops.core.errors import InputError

BOM = "\ufeff"


class Refusal(enum.Enum):
    """Why a file that needs fixing is left as it is; the value is the finding's hint."""

    NO_GIT = (
        "not fixed: git cannot list tracked files here (not a git work tree, no git command, "
        "or a repository git refuses to read), and --fix only rewrites files git tracks"
    )
    UNTRACKED = (
        "not fixed: git does not track this file, and --fix only rewrites tracked files "
        "(git add it first if it belongs to the campaign)"
    )
    NOT_TEXT = (
        "not fixed: not valid UTF-8 text, and --fix only rewrites text files; a CR byte in a "
        "binary file or another encoding may not be a line ending"
    )
    YAML_UNREADABLE = (
        "not fixed: the YAML does not parse, so --fix cannot tell quoted strings (whose CRs are "
        "part of the value) from line ends; fix the syntax first"
    )


def tracked(root: Path) -> frozenset[str] | None:
    """Paths git tracks under ``root``, relative to it; None when ``root`` is not in a work tree.

    Paths are decoded as the directory walk decodes them (os.fsdecode), so they compare equal.
    """
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotePath=false", "ls-files", "-z", "--cached", "--", "."],
            cwd=root,
            capture_output=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return frozenset(os.fsdecode(p) for p in proc.stdout.split(b"\0") if p)


def target_rel(root: Path, rel: str) -> str | None:
    """``rel`` after following symlinks, relative to ``root`` (the file that would be written)."""
    try:
        target = (root / rel).resolve()
        return target.relative_to(root.resolve()).as_posix()
    except (OSError, RuntimeError, ValueError):
        return None


def text_of(data: bytes) -> str | None:
    """``data`` as text, or None when it is not text --fix may touch (NUL, invalid UTF-8)."""
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def quoted_spans(text: str) -> list[tuple[int, int]] | None:
    """``[start, end)`` character spans of the quoted scalars in YAML ``text``, quotes included.

    None when the text does not tokenize and has a quote character (a span might be missed).
    Only the scanner runs: it does not recurse, so deep nesting cannot exhaust the stack.
    """
    try:
        tokens = list(yaml.scan(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return None if ('"' in text or "'" in text) else []
    return [
        (t.start_mark.index, t.end_mark.index)
        for t in tokens
        if isinstance(t, yaml.ScalarToken) and t.style in ('"', "'")
    ]


# A line ending with CRs before its LF: CRLF, and CR CR LF (a CRLF file converted once more).
LINE_END_CR = re.compile("\r+\n")


@dataclass(frozen=True)
class Normalized:
    data: bytes
    converted: int  # line endings turned into LF
    kept: tuple[int, ...]  # character offsets, in the fixed text, of CRs left inside quoted scalars
    lone: tuple[int, ...]  # character offsets, in the fixed text, of lone CRs left elsewhere

    def byte_offset(self, char_offset: int) -> int:
        """``char_offset`` in the fixed text as an offset into ``data``."""
        return len(self.data.decode("utf-8")[:char_offset].encode("utf-8"))


def normalize(text: str, spans: Sequence[tuple[int, int]] = ()) -> Normalized:
    """LF line endings and no leading BOM, except inside ``spans`` (left byte for byte).

    Only CRs before an LF end a line; a lone CR stays where it is (see the module docstring).
    """
    out: list[str] = []
    size = 0
    converted = 0
    kept: list[int] = []
    lone: list[int] = []
    pos = 0
    for start, end in [*sorted(spans), (len(text), len(text))]:
        if start < pos:  # overlapping spans do not occur; be safe anyway
            continue
        chunk, count = LINE_END_CR.subn("\n", text[pos:start])
        converted += count
        lone.extend(size + i for i, ch in enumerate(chunk) if ch == "\r")
        size += len(chunk)
        inside = text[start:end]
        kept.extend(size + i for i, ch in enumerate(inside) if ch == "\r")
        size += len(inside)
        out.extend((chunk, inside))
        pos = end
    result = "".join(out)
    shift = 1 if result.startswith(BOM) else 0
    return Normalized(
        data=result[shift:].encode("utf-8"),
        converted=converted,
        kept=tuple(k - shift for k in kept),
        lone=tuple(k - shift for k in lone),
    )


def write_in_place(path: Path, data: bytes, *, rel: str) -> None:
    """Replace ``path``'s content through its own inode: mode, owner, xattrs and links survive.

    Follows a symlink (the caller has checked that it stays inside the campaign). Not atomic:
    a crash mid-write can leave a mix, which is why only tracked files are written (git has the
    old content) and why the bytes are synced before returning.
    """
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(path=rel, message=f"cannot open for writing: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(path=rel, message="not a regular file; not written")
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(fd, view[written:], written)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except OSError as exc:
        raise InputError(path=rel, message=f"cannot write: {exc.strerror}") from None
    finally:
        os.close(fd)
