"""Append-only line files (the wrapper lock, later the ledger): whole lines or nothing visible.

Writers serialise on an exclusive ``flock`` of the file itself, so concurrent appends from many
processes never interleave; each batch goes out in one ``write`` and is fsynced before the lock is
released. A crash can still leave a torn last line (a write cut short); readers report it apart
from the complete lines, and the next append starts on a fresh line so the fragment never merges
with a real record.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from campaignops.core.errors import InputError

FILE_MODE = 0o644


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (signals, quotas); with O_APPEND each piece lands at the
    # end, and the flock keeps other writers out until the whole batch is down.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _fsync_dir(path: Path) -> None:
    # A new file's directory entry is only durable once its directory is synced.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unwritable(path: Path, exc: OSError) -> InputError:
    return InputError(
        path=str(path),
        message=f"cannot append: {exc.strerror or exc}",
        hint="make it writable (chattr -i, a read-write mount, free disk space) and run the "
        "command again",
    )


def check_appendable(path: Path) -> None:
    """InputError unless ``path`` (created if missing) can be opened for appending: asked before
    a step that must be recorded is taken, so an immutable file or a read-only mount stops it
    with nothing done."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    os.close(fd)


def append_lines(path: Path, lines: Sequence[str]) -> None:
    """Append ``lines`` (without their newlines) to ``path`` atomically with respect to others.

    Creates the file (mode 0644) and its parent directory when missing. A line may not contain a
    newline or carriage return: one record is one line.
    """
    for line in lines:
        if "\n" in line or "\r" in line:
            raise ValueError(f"journal line contains a line break: {line!r}")
    if not lines:
        return
    payload = "".join(f"{line}\n" for line in lines).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise _unwritable(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # Checked under the lock: only a crashed writer can leave the end torn.
            if _ends_torn(fd):
                payload = b"\n" + payload
            _write_all(fd, payload)
            os.fsync(fd)
        except OSError as exc:  # a full disk: what was written is a torn line readers skip
            raise _unwritable(path, exc) from None
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def read_lines(path: Path) -> tuple[list[str], str | None]:
    """``(complete lines, torn trailing fragment or None)``; a missing file has no lines.

    Reads under a shared lock so an append in progress is seen whole or not at all.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return [], None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read()
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            path=str(path),
            message=f"invalid UTF-8 at line {line} (byte offset {exc.start})",
            hint="restore the file from git; it is written by campaignops only",
        ) from None
    *complete, last = text.split("\n")
    return complete, (last or None)
