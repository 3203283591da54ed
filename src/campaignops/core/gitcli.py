"""git's command line, one call at a time: literal pathspecs, the repository's own objects, no
optional locks. The runner's git facts (runner/gitcalls.py, runner/gitfacts.py), the reads at
a ``--base`` ref (core/gitrefs.py) and ``campaign new``'s first commit (generate/new.py) go
through here.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from campaignops.core.errors import GitError

# git's messages in English (LC_ALL=C), whatever the user's locale: toplevel() and the ref
# reads tell "no repository here" and "older than the reflog" from git's own words.
_NO_WORK_TREE = ("not a git repository", "must be run in a work tree", "cannot change to")


def call(
    top: Path, *args: str, stdin: bytes | None = None, config: Sequence[str] = ()
) -> subprocess.CompletedProcess[bytes]:
    """One git command in ``top``, whatever its exit; ``run`` when only success will do.
    ``config``: ``name=value`` settings for this command only (``git -c``)."""
    # Literal pathspecs: a campaign directory named "a*b" is a name, not a pattern (check-ignore
    # reads paths from stdin, and refuses the option).
    literal = [] if args[0] == "check-ignore" else ["--literal-pathspecs"]
    # HEAD's own objects: a local `git replace` would show another tree under HEAD's id, one
    # no clone holds (refs/replace/ is not pushed by default).
    settings = [word for setting in config for word in ("-c", setting)]
    argv = ["git", *literal, "--no-replace-objects", "--no-optional-locks", *settings]
    argv += ["-C", str(top), *args]
    env = {**os.environ, "LC_ALL": "C"}  # read now: tests and hooks change the environment
    return subprocess.run(argv, input=stdin, capture_output=True, check=False, env=env)


def run(
    top: Path,
    *args: str,
    stdin: bytes | None = None,
    ok: Sequence[int] = (0,),
    config: Sequence[str] = (),
) -> bytes:
    proc = call(top, *args, stdin=stdin, config=config)
    if proc.returncode not in ok:
        raise GitError(
            message=f"git {args[0]} failed in {top}: "
            + os.fsdecode(proc.stderr).strip().replace("\n", " "),
            hint="run it by hand to see why (git fsck if the repository is damaged)",
        )
    return proc.stdout


def toplevel(path: Path) -> Path | None:
    """The top of the working tree ``path`` is in, resolved; None when it is in none (no
    repository, a bare one, or no such directory)."""
    proc = call(path, "rev-parse", "--show-toplevel")
    if proc.returncode == 0:
        return Path(os.fsdecode(proc.stdout.rstrip(b"\n"))).resolve()
    said = os.fsdecode(proc.stderr)
    if any(words in said for words in _NO_WORK_TREE):
        return None
    raise GitError(  # e.g. "detected dubious ownership": a repository git refuses to read
        message=f"git rev-parse failed in {path}: " + said.strip().replace("\n", " "),
        hint="run it by hand to see why (git fsck if the repository is damaged)",
    )


def fields(out: bytes) -> list[str]:
    return [os.fsdecode(f) for f in out.split(b"\0") if f]
