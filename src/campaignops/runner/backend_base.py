"""The one interface every backend provides (``Backend``), and reading a backend's page.

Below every backend module: the backends (localbackend, sshbox, sshplaced, sshsubmit) and the
gates read pages and check names through this module, and ``backends`` (the registry, which
imports the backend modules) re-exports it. Keeping the protocol here, apart from the registry,
is what keeps the backends and the registry out of an import circle.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from campaignops import frontmatter
from campaignops.errors import InputError, UsageError
from campaignops.runner import scheduler
from campaignops.runner.spec import JobSpec, JobState

Run = scheduler.Runs


class Backend(Protocol):
    """What the runner asks of a backend; each method is one argv to run or one answer to read
    (never a call: the runner makes the calls, through ``scheduler.call``)."""

    @property
    def NAME(self) -> str: ...

    @property
    def TRANSIENT(self) -> re.Pattern[str]: ...

    # Errors of a submission known to come before the scheduler accepted anything (retried);
    # any other transient or ambiguous error leaves the outcome unknown (scheduler.call).
    @property
    def UNSENT(self) -> re.Pattern[str]: ...

    # Exit statuses of a query whose stdout is still the answer for the ids it knows (qstat
    # exits 153 when one id was purged from the server's history, and prints the others).
    @property
    def PARTIAL_ANSWER(self) -> frozenset[int]: ...

    def render(self, spec: JobSpec) -> str: ...

    def submit_argv(self, script_path: str) -> list[str]: ...

    def parse_job_id(self, stdout: str) -> str: ...

    # ONE query set for every unfinished job (finished ones too), and its reading: each job's
    # state with each array task's own in ``tasks``.
    def query_argvs(self, job_ids: Sequence[str]) -> list[list[str]]: ...

    def parse_states(self, outputs: Sequence[str]) -> dict[str, JobState]: ...

    # ONE query for the no_sibling gate: the live jobs, each with its live tasks.
    def sibling_argv(self, names: Sequence[str]) -> list[str]: ...

    def parse_live(self, stdout: str) -> tuple[JobState, ...]: ...

    # Every job under these names, finished or not: how a lost or unknown result is found.
    def lookup(self, names: Sequence[str], call: Run) -> dict[str, JobState]: ...

    # campaign cancel: one call for jobs or array tasks (task_id names one), and where each
    # task's output goes (relative to the work directory).
    def cancel_argv(self, job_ids: Sequence[str]) -> list[str]: ...

    def task_id(self, job_id: str, index: int) -> str: ...

    def log_path(self, job_id: str, *, name: str, index: int | None) -> str: ...


def calling(backend: Backend, call: Run) -> Run:
    """``call`` as this backend should be called: the real scheduler call retries the backend's
    own transient errors; a stand-in (tests, benchmarks) is used as it is."""
    if call is scheduler.call:
        return functools.partial(
            scheduler.call, retryable=backend.TRANSIENT, answered=backend.PARTIAL_ANSWER
        )
    return call


def submitting(backend: Backend, call: Run) -> Run:
    """``calling``, for the submission call itself: retried only on the backend's ``UNSENT``
    errors; a timeout or an error that may follow acceptance is an unknown outcome."""
    if call is scheduler.call:
        return functools.partial(
            scheduler.call, retryable=backend.TRANSIENT, unsent=backend.UNSENT, submission=True
        )
    return call


# What a backend name may be: one file name under backends/ (no "/", no leading "." that could
# climb out), short enough to open. The policy's own pattern is stricter; this one only keeps
# a name from --backend or the ledger from reading outside backends/.
BACKEND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def checked_name(name: str) -> str:
    """``name``, or UsageError (exit 2) when it cannot be a backend page's name."""
    if not BACKEND_NAME.match(name):
        raise UsageError(
            message=f"{name[:80]!r} is not a backend name (letters, digits and . _ -, at most "
            "128, starting with a letter or digit)",
            hint="a backend named by --backend, a manifest or a ledger record must be one of "
            "campaign.yaml's backends (each has a page backends/NAME.md)",
        )
    return name


def page_path(name: str) -> str:
    return f"backends/{checked_name(name)}.md"


def page(root: Path, name: str) -> dict[str, Any] | None:
    """The backend page's front matter, or None when the campaign has no page for it."""
    rel = page_path(name)
    if not (root / rel).is_file():
        return None
    try:
        text = (root / rel).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = (root / rel).read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(
            path=rel,
            message=f"invalid UTF-8 at line {line} (byte offset {exc.start})",
            hint="re-save the page as UTF-8 and commit it (campaign check names every such file)",
        ) from None
    except OSError as exc:
        raise InputError(
            path=rel, message=f"cannot read: {exc.strerror}", hint="check permissions"
        ) from None
    return frontmatter.mapping(text, path=rel)


def module_for(page: Mapping[str, Any] | None) -> str | None:
    if not page:
        return None
    scheduler_name = page.get("scheduler")
    if scheduler_name in ("slurm", "pbs"):
        return str(scheduler_name)
    kind = page.get("kind")
    return str(kind) if kind in ("local", "ssh", "gridengine") else None
