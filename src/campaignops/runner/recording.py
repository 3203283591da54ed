"""What follows a submission the scheduler accepted: lock the wrappers, re-render STATUS.md,
and (``--commit``) commit the bookkeeping and push it.

None of these may hide that a job was submitted: each step that fails becomes a warning (the
command then exits 1 and says what to run), never an exception after the job id is known.
"""

from __future__ import annotations

import datetime as dt
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from campaignops.core import layout
from campaignops.core.errors import CampaignError
from campaignops.model import lockfile
from campaignops.views import render as views

JOBS_DIR = ".campaign/jobs"
STATUS_FILE = "STATUS.md"


class _Submitted(Protocol):
    @property
    def ledger_id(self) -> str: ...
    @property
    def job_id(self) -> str | None: ...
    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Warned:
    """A step after the submission that did not happen: what, why, and the command to run."""

    step: str
    message: str
    hint: str


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # errors="replace": git quotes odd file names, but its messages may carry any bytes.
    return subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        timeout=300,
    )


def commit_bookkeeping(root: Path, submitted: Sequence[_Submitted]) -> str:
    """Commit the ledger, the lock, STATUS.md and the job scripts, and only them: this
    submission's, and any an earlier submit without --commit left (the ledger committed here
    names them; left untracked, they would stop `campaign update` and the committed gate).

    Generated files: the campaign's own hooks are not run on them (``--no-verify``), since a
    hook failing on an unrelated stale stamp must not leave the submission uncommitted.
    """
    jobs_dir = root / JOBS_DIR
    earlier = sorted(p.name for p in jobs_dir.glob("*.sh")) if jobs_dir.is_dir() else []
    ours = [f"{s.ledger_id}.sh" for s in submitted]
    scripts = [f"{JOBS_DIR}/{name}" for name in dict.fromkeys([*earlier, *ours])]
    kept = (layout.LEDGER_FILE, layout.LOCK_FILE, STATUS_FILE, *scripts)
    files = [p for p in kept if (root / p).exists()]
    added = _git(root, "add", "--", *files)
    if added.returncode != 0:
        raise CampaignError(message=f"git add failed: {added.stderr.strip()}", hint="")
    jobs = ", ".join(f"{s.name} ({s.job_id or 'outcome unknown'})" for s in submitted)
    done = _git(root, "commit", "--no-verify", "-q", "-m", f"Submit {jobs}", "--", *files)
    if done.returncode != 0:
        raise CampaignError(message=f"git commit failed: {done.stderr.strip()}", hint="")
    return _git(root, "rev-parse", "HEAD").stdout.strip()


def after_submission(
    *,
    root: Path,
    wrappers: Sequence[str],
    today: dt.date,
    submitted: Sequence[_Submitted],
    commit: bool,
    push: bool,
) -> tuple[str | None, tuple[Warned, ...]]:
    """The commit made (or None), and the steps that failed."""
    warnings: list[Warned] = []
    if wrappers:
        try:
            lockfile.lock(root=root, paths=list(wrappers), cwd=root, today=today)
        except (CampaignError, OSError) as exc:
            warnings.append(
                Warned(
                    step="lock",
                    message=f"the wrappers were not locked: {_why(exc)}",
                    hint="campaign lock " + " ".join(shlex.quote(w) for w in wrappers),
                )
            )
    try:
        views.render_all(root=root, write=True)
    except (CampaignError, OSError) as exc:
        warnings.append(
            Warned(
                step="render",
                message=f"STATUS.md was not re-rendered: {_why(exc)}",
                hint="campaign render (or campaign status --refresh)",
            )
        )
    if not commit or not submitted:
        return None, tuple(warnings)
    try:
        sha = commit_bookkeeping(root, submitted)
    except (CampaignError, OSError, subprocess.SubprocessError) as exc:
        warnings.append(
            Warned(
                step="commit",
                message=f"the ledger was not committed: {_why(exc)}",
                hint=f"git add {layout.LEDGER_FILE} {STATUS_FILE} {JOBS_DIR} && git commit",
            )
        )
        return None, tuple(warnings)
    if push:
        pushed = _git(root, "push", "-q")
        if pushed.returncode != 0:
            warnings.append(
                Warned(
                    step="push",
                    message="the commit was not pushed (require_pushed is set, so the next "
                    f"submit is refused until it is): {pushed.stderr.strip()[-300:]}",
                    hint="git push (git pull --rebase first if the branch moved)",
                )
            )
    return sha, tuple(warnings)


def _why(exc: BaseException) -> str:
    return exc.message if isinstance(exc, CampaignError) else str(exc)
