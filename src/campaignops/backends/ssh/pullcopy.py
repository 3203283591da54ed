"""The copy of ``campaign pull``: exactly the expected files, regular files only, placed safely.

One ``rsync`` per instance and deploy directory, over the same ssh options as every other call,
and only for paths campaignops.backends.ssh.pull has already checked (declared by the job's record,
under the stage's output root, no ``.git``, no ``..``):

- the list goes on rsync's stdin (``--files-from=- --from0``): no file list is ever left in a
  shared ``/tmp``, whatever kills the pull;
- rsync writes into a private staging directory, ``.campaign/ssh/.pull/<instance>/<hash>/``
  (mode 0700, gitignored with ``.campaign/ssh/``), never into the tree itself: a rogue sender that
  names other files fills only the staging directory;
- ``-t`` without ``-a``: no links (``--no-links``), devices, specials, owners, groups or
  permissions; new files get ``--chmod=D755,F644`` under the umask (no set-uid, no exec bit);
  ``--no-implied-dirs``: the box's parent directories are not copied, links or not;
- then each expected path that arrived as a regular file (lstat) is moved into the checkout
  (a rename: a link at the destination is replaced, never written through) below parents
  that are real directories (campaignops.backends.ssh.outputs); the staging directory is removed.

``--partial-dir=.rsync-partial``: an interrupted transfer keeps its partial file in the staging
directory (which stays when rsync fails) and the next pull resumes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import outputs as outputpaths
from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import CampaignError

PARTIAL_DIR = ".rsync-partial"
STAGING = ".campaign/ssh/.pull"  # under the campaign root; .campaign/ssh/ is gitignored
RSYNC_OPTIONS = (
    "-t",
    "--no-links",
    "--no-devices",
    "--no-specials",
    "--no-owner",
    "--no-group",
    "--no-perms",
    "--chmod=D755,F644",
    "--no-implied-dirs",
    "--from0",
    "--files-from=-",
)

Run = Callable[..., "subprocess.CompletedProcess[str]"]


class PullError(CampaignError):
    """A pull that cannot start or whose transfer failed."""

    exit_code = 2


def rsync_argv(box: Instance, deploy: str, dest: Path) -> list[str]:
    """rsync of the files named on stdin (NUL-separated) from the deploy directory into
    ``dest``, through the same ssh options every other call uses (pinned host key, batch mode,
    keepalives)."""
    ssh = sshlink.ssh_argv(box, "", control=sshlink.control_dir())[:-3]  # drop "--" host cmd
    return [
        "rsync",
        *RSYNC_OPTIONS,
        f"--partial-dir={PARTIAL_DIR}",
        "-e",
        shlex.join(ssh),
        "--",
        f"{box.host}:{deploy}/",
        f"{dest}/",
    ]


def staging(root: Path, box: Instance, deploy: str) -> Path:
    """The private staging directory of one deploy directory of the instance (created 0700;
    one per deploy directory, so a copy resumed after a kill never meets another commit's
    file of the same name); PullError when a link or a file stands where it goes."""
    tag = hashlib.sha256(deploy.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    rel = f"{STAGING}/{box.name}/{tag}"
    problem = outputpaths.parents_problem(root, rel + "/x")
    if problem is not None:
        raise PullError(
            message=f"instance {box.name}: cannot stage the copy: {problem}",
            hint=f"remove {STAGING} (it holds only unfinished copies) and pull again",
        )
    path = root / rel
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def fetch(
    box: Instance,
    deploy: str,
    files: Sequence[str],
    root: Path,
    run: Run,
    dest: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Copy ``files`` (checked relative paths) from ``deploy`` on the box into the checkout,
    each at its own path or at ``dest``'s for it (a log's name here, computed by this checkout);
    returns why each one that came but was not placed was refused."""
    stage = staging(root, box, deploy)
    try:
        done = run(
            rsync_argv(box, deploy, stage),
            input="".join(f + "\0" for f in files),
            capture_output=True,
            text=True,
            timeout=sshlink.CALL_TIMEOUT_S * 12,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PullError(
            message=f"instance {box.name}: rsync did not finish: {exc}",
            hint="run campaign pull again: rsync resumes from .rsync-partial",
        ) from None
    # Exit 23/24 (some files vanished, could not be read, or were not regular files) still
    # copied the rest: the verdicts name what is missing. Anything else is a failed transfer.
    if done.returncode not in (0, 23, 24):
        raise PullError(
            message=f"instance {box.name}: rsync exit {done.returncode}: "
            f"{done.stderr.strip()[-300:]}",
            hint="run campaign pull again (it resumes); check the box's disk and rsync",
        )
    refused = {}
    try:
        for rel in files:
            problem = place(root, stage, rel, (dest or {}).get(rel, rel))
            if problem is not None:
                refused[rel] = problem
    finally:
        shutil.rmtree(stage, ignore_errors=True)  # never follows a link in it
        for empty in (stage.parent, stage.parent.parent):
            with contextlib.suppress(OSError):  # another copy may still be in it
                empty.rmdir()
    return refused


def place(root: Path, stage: Path, rel: str, to: str | None = None) -> str | None:
    """Move the staged ``rel`` into the checkout (at ``to``, default ``rel``) when it is a
    regular file and every parent there is a real directory; why not otherwise (None: placed,
    or it did not come)."""
    to = rel if to is None else to
    source = stage / rel
    if outputpaths.parents_problem(stage, rel) is not None:
        return "arrived below a link"
    try:
        mode = os.lstat(source).st_mode
    except FileNotFoundError:
        return None  # not sent: the verdict says missing or not pulled
    if not outputpaths.regular(source):
        return f"arrived as something else than a regular file (mode {mode:o}): not kept"
    here = root
    for part in PurePosixPath(to).parts[:-1]:
        here = here / part
        with contextlib.suppress(FileExistsError):
            here.mkdir()
    problem = outputpaths.parents_problem(root, to)
    if problem is not None:
        return f"not written: {problem}"
    try:
        source.replace(root / to)
    except OSError as exc:
        return f"not written: {exc.strerror}"
    return None
