"""Replacing a file's content atomically: a reader sees the old bytes or the new, never a mix.

``--fix`` rewrites files people are editing and hooks are reading, so a crash or a full disk in
the middle of a write must not leave half a script behind. The new content goes to a temporary
file in the same directory (so the rename cannot cross filesystems), is flushed to disk, then
renamed over the original; the directory is synced so the rename itself survives a crash.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from campaignops.core.errors import InputError

# Permission bits a new file asks for; the umask takes its usual share, as with any editor.
NEW_FILE_MODE = 0o666
_TEMP_ATTEMPTS = 16
# Filesystems that cannot sync a directory say so with these; the rename has happened anyway.
_NO_DIR_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES, errno.EPERM})


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.absolute().relative_to(root.absolute()).as_posix()
        except ValueError:
            pass
    return str(path)


def _target(path: Path, root: Path | None, name: str) -> Path:
    """The regular file (or file to be) that ``path`` designates, refusing to leave ``root``."""
    if root is None:
        # Without a boundary there is no telling where a link may lead: follow none.
        if path.is_symlink():
            raise InputError(
                path=name,
                message=f"symlink to {path.readlink()}; not written",
                hint="rewrite the file the link points to, not the link",
            )
        return path.absolute()
    boundary = root.resolve()
    target = path.absolute().resolve()
    if target != boundary and boundary not in target.parents:
        raise InputError(
            path=name,
            message=f"resolves to {target}, outside the campaign {boundary}; not written",
            hint="keep campaign files inside the repository (copy the file in, or exclude it)",
        )
    if path.is_symlink() and not target.exists():
        raise InputError(
            path=name,
            message=f"dangling symlink to {path.readlink()}; not written",
            hint="fix or remove the link",
        )
    return target


def _existing_mode(target: Path, name: str) -> int | None:
    try:
        st = target.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path=name, message=f"cannot stat: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path=name, message="not a regular file; not written")
    return stat.S_IMODE(st.st_mode)


def _create_temp(directory: Path, stem: str) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(_TEMP_ATTEMPTS):
        # os.urandom(n).hex() is secrets.token_hex(n) without importing hmac, hashlib and random:
        # every executor and query process writes through here.
        candidate = directory / f".{stem}.{os.urandom(6).hex()}.tmp"
        try:
            return os.open(candidate, flags, NEW_FILE_MODE), candidate
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(directory))


def _sync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        if exc.errno in _NO_DIR_SYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, root: Path | None = None) -> None:
    """Replace ``path``'s content with ``data`` (or its pieces, written in turn: a large file
    need not be joined in memory first), keeping its permission bits.

    With ``root``, symlinks are followed only while they stay inside ``root`` (the link is kept
    and its target rewritten); without it, a symlink is refused. A missing file is created.
    Every refusal or OS failure raises InputError naming the path (relative to ``root``).
    """
    name = _display(path, root)
    target = _target(path, root, name)
    mode = _existing_mode(target, name)
    directory = target.parent
    try:
        fd, temp = _create_temp(directory, target.name)
    except OSError as exc:
        raise InputError(
            path=name, message=f"cannot write: {exc.strerror}", hint="check permissions"
        ) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, bytes):
                fh.write(data)
            else:
                fh.writelines(data)
            fh.flush()
            if mode is not None:
                # Through the descriptor, not the name: the name could be swapped meanwhile.
                if hasattr(os, "fchmod"):
                    os.fchmod(fh.fileno(), mode)
                else:
                    temp.chmod(mode)
            os.fsync(fh.fileno())
        temp.replace(target)
    except BaseException as exc:
        temp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(
                path=name, message=f"cannot write: {exc.strerror}", hint="check permissions"
            ) from None
        raise
    try:
        _sync_directory(directory)
    except OSError as exc:
        raise InputError(
            path=name,
            message=f"written, but syncing its directory failed: {exc.strerror}",
            hint="check the disk; the new content may not survive a crash",
        ) from None
