"""The one interface every backend provides (``Backend``), and reading a backend's page.

Below every backend module: the backends (localbackend, sshbox, sshplaced, sshsubmit) and the
gates read pages and check names through this module, and ``backends`` (the registry, which
imports the backend modules) re-exports it. Keeping the protocol here, apart from the registry,
is what keeps the backends and the registry out of an import circle.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from campaignops.backends import command as scheduler
from campaignops.core.errors import CampaignError, InputError
from campaignops.model import backendpage, jobref
from campaignops.model.backendpage import checked_name as checked_name
from campaignops.model.backendpage import page_path as page_path
from campaignops.model.jobspec import JobSpec, JobState, Resources
from campaignops.model.ledger import Job

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


@dataclass(frozen=True)
class Doubt:
    """A ledger line the backend's page does not vouch for (campaign check reports it; the
    backend never acts on it): where, what, and what to do."""

    line: int
    message: str
    hint: str


def _never(job_id: str) -> bool:
    return False


def _no_refusals(root: Path, job_ids: Iterable[str]) -> list[str]:
    return []


def _no_doubts(root: Path) -> Iterator[Doubt]:
    return iter(())


def _no_task_ref(ref: str) -> tuple[str, int] | None:
    return None


def _no_category(exit_code: int | None, reason: str | None) -> str | None:
    return None


def _no_note(job: Job, target: str, page: Mapping[str, Any] | None) -> str | None:
    return None


def _no_aliases(root: Path, name: str, page: Mapping[str, Any] | None) -> frozenset[str]:
    return frozenset()


def _no_tails(stdout: str, job_id: str) -> dict[int, str]:
    return {}


def _says_all(res: Resources) -> CampaignError | None:
    return None


def _names_all(name: str) -> CampaignError | None:
    return None


@dataclass(frozen=True)
class Kind:
    """One registered backend (backends/registry.py lists them; each backend folder's ``kind``
    module makes its own): which pages it serves, how it is made for a checkout, and what it
    answers beyond ``Backend``. Every hook has a neutral default, so a backend gives the first
    three fields and only the hooks it has something to say in (Slurm and PBS: their array ids
    and verdict words); the runner asks the hooks and never which backend it holds."""

    name: str
    serves: Callable[[Mapping[str, Any]], bool]
    make: Callable[[Path, str], Backend]
    # Its executor runs the manifest's box keys (conda, gpu_free_threshold_mib) on every job.
    box_keys: bool = False
    # Its boxes can stop themselves once idle (the page's self_stop, budgets.idle_stop_minutes).
    self_stops: bool = False
    # A job (by id) whose OUT_OF_MEMORY its own executor already retried (manifest oom_retry):
    # the runner does not submit it again.
    retries_oom_itself: Callable[[str], bool] = _never
    # status --refresh: one line per job it will not ask about (its record is not vouched for),
    # and a warning about how it was asked (None: nothing to say).
    refusals: Callable[[Path, Iterable[str]], list[str]] = _no_refusals
    query_warning: Callable[[], str | None] | None = None
    # campaign check: the ledger lines its page does not vouch for.
    doubts: Callable[[Path], Iterator[Doubt]] = _no_doubts
    # The job an id of its own names (an array task's or the array's id → the job's). The
    # default reads the campaign's JOB_INDEX form, which task_id writes unless it says otherwise.
    job_of: Callable[[str], str] = jobref.job_of
    # A task reference in its own syntax → (the job id as recorded, the array index), or None
    # (the campaign's own JOB_INDEX form is read by model/jobref.py for every backend).
    task_ref: Callable[[str], tuple[str, int] | None] = _no_task_ref
    # diagnose: the failure category its own words give (a pending reason, a server exit code).
    verdict_category: Callable[[int | None, str | None], str | None] = _no_category
    # Whether this checkout holds a job of its own (its state is here), for a backend whose jobs
    # only the submitting machine can see (None: any clone can ask the backend about any job).
    ran_here: Callable[[Path, str], bool] | None = None
    # status --watch: how soon to look again when every open job is its own, for a backend whose
    # query costs nothing and hammers nobody (None: the watch's interval, a minute or more).
    watch_pause_s: float | None = None
    # STATUS.md: what to add after a cell's job id (where it ran, what it cost), or None.
    cell_note: Callable[[Job, str, Mapping[str, Any] | None], str | None] = _no_note
    # The names a manifest's ``ssh:`` may give for one of its boxes (a page's instances' names
    # and hosts), for a backend that runs on named boxes.
    aliases: Callable[[Path, str, Mapping[str, Any] | None], frozenset[str]] = _no_aliases
    # campaign guard: the scheduler's own commands that submit or stop a job outside the gates and
    # the ledger, and a command that asks for an allocation unless one of the named environment
    # variables says it already runs inside one (Slurm's srun).
    raw_submit: frozenset[str] = frozenset()
    raw_cancel: frozenset[str] = frozenset()
    allocation: tuple[str, tuple[str, ...]] | None = None
    # campaign cancel: the log tails its cancel call's answer (stdout) brought for the job's
    # tasks, by index, for a backend whose logs are written elsewhere (a box) until they come
    # home; the others' are read here before the call.
    cancel_tails: Callable[[str, str], dict[int, str]] = _no_tails
    # campaign check: the refusal its script renderer gives for a request its directives cannot
    # say (a key the scheduler has no word for, a value no directive holds), else None; its
    # render raises the same error at submit.
    unsayable: Callable[[Resources], CampaignError | None] = _says_all
    # campaign check: the refusal its renderer gives for a job name (model/jobspec.job_name).
    unnamable: Callable[[str], CampaignError | None] = _names_all


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
    return backendpage.front_matter(text, path=rel)
