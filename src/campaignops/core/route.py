"""Where a path leads in a working tree, followed as the kernel would without leaving it: the
committed gate compares every symlink on the way, and refuses one that leads out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_LINKS = 40  # the kernel's own limit on symlinks followed in one path


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
