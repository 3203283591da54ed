"""Where a pulled output may land in this checkout, and how it is read once there.

A rented box is somebody else's computer: the paths it answers with, and the files it sends,
are input. A pulled output is written only at a path that

- is relative, every component non-empty and neither ``.`` nor ``..`` (``a//b``, ``./a`` are
  refused, not normalised: the path the record declares is the path written);
- has no component that is ``.git`` in any case (a ``sub/.git/config`` would be a repository's
  config, run by the next ``git status`` there), and no control character;
- lies under the stage's own output root (``runs/<stage>/``, what ``${CAMPAIGN_OUT}`` is);
- has no symbolic link, and nothing but directories, among its existing parents in the checkout
  (a link planted there would carry the write elsewhere; judged with lstat, never followed).

Reading a pulled file never follows a link either: :func:`regular` says whether a path is a
regular file (lstat), and :func:`open_regular` opens it with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

GIT_DIR = ".git"


def problem(rel: object, out_root: str) -> str | None:
    """Why ``rel`` may not be written under the checkout as a pulled output of a stage whose
    output root is ``out_root`` (``runs/<stage>``), or None."""
    if not isinstance(rel, str) or not rel:
        return "is not a path"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rel):
        return "holds a control character"
    if rel.startswith("/"):
        return "is absolute"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    if any(p.casefold() == GIT_DIR for p in parts):
        return "has a .git component"
    if not rel.startswith(out_root.rstrip("/") + "/"):
        return f"is not under {out_root}/, the stage's output root"
    return None


def parents_problem(root: Path, rel: str) -> str | None:
    """Why writing ``root/rel`` could land elsewhere: an existing parent (below ``root``) that is
    a symbolic link or not a directory; None when every existing parent is a real directory."""
    here = root
    for part in PurePosixPath(rel).parts[:-1]:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return None  # the rest is created, as directories, by the copy
        if stat.S_ISLNK(mode):
            return f"{here.relative_to(root)} is a symbolic link in this checkout"
        if not stat.S_ISDIR(mode):
            return f"{here.relative_to(root)} is not a directory in this checkout"
    return None


def regular(path: Path) -> bool:
    """Whether ``path`` itself (never a link's target) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading, refusing a link (``O_NOFOLLOW``: ELOOP) and anything but a
    regular file (a FIFO would block the read forever: ``O_NONBLOCK`` for the open only)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
