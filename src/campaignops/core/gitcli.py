"""git's command line, one call at a time: literal pathspecs, the repository's own objects, no
optional locks. The runner's git facts (runner/gitcalls.py, runner/gitfacts.py) and the reads at
a ``--base`` ref (core/gitrefs.py) go through here.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from campaignops.core.errors import GitError


def run(top: Path, *args: str, stdin: bytes | None = None, ok: Sequence[int] = (0,)) -> bytes:
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


def fields(out: bytes) -> list[str]:
    return [os.fsdecode(f) for f in out.split(b"\0") if f]
