"""The six gates a submission passes, in order: committed, authorized, smoke_first, no_sibling,
breaker, budget (DESIGN §6). Each family has its own module: runner/committed.py,
runner/smoke.py, runner/sibling.py, runner/breaker.py, runner/budget.py; authorized, the order,
and the refusal are here.

Each gate is a pure function of explicit facts returning a Verdict that says what is wrong,
where, and what to do. ``repo_facts`` is the one place that reads git; the scheduler query and
the ledger are read by the caller and passed in, so every gate can be tested on plain values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from campaignops.backends import registry
from campaignops.core.errors import CampaignError
from campaignops.model import backendpage, ledger_index, pagefit
from campaignops.model.jobspec import JobState, Resources
from campaignops.model.ledger import Job
from campaignops.model.ledger_index import Index
from campaignops.model.ledger_index import signature_of as signature_of  # re-exported
from campaignops.model.policy import Policy
from campaignops.runner.breaker import BREAKER_RUN as BREAKER_RUN  # re-exported: learn.summary
from campaignops.runner.breaker import breaker as breaker  # re-exported
from campaignops.runner.breaker import tripped_run as tripped_run  # re-exported: learn.summary
from campaignops.runner.budget import budget
from campaignops.runner.committed import committed as committed  # re-exported
from campaignops.runner.gitfacts import RepoFacts
from campaignops.runner.request import Request as Request  # re-exported: submit, tests
from campaignops.runner.sibling import job_name as job_name  # re-exported: tests
from campaignops.runner.sibling import no_sibling as no_sibling  # re-exported
from campaignops.runner.smoke import smoke_first as smoke_first  # re-exported
from campaignops.runner.verdict import Verdict as Verdict  # re-exported: submit, cli
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import refuse as _refuse

GATES = ("committed", "authorized", "smoke_first", "no_sibling", "breaker", "budget")


class GateRefused(CampaignError):
    """A gate refused the submission: nothing was submitted."""

    exit_code = 1

    def __init__(self, *, verdict: Verdict) -> None:
        super().__init__(message=f"{verdict.gate}: {verdict.reason}", hint=verdict.hint)
        self.verdict = verdict

    def details(self) -> Mapping[str, object]:
        return {"gate": self.verdict.gate, "reason": self.verdict.reason}


def authorized(
    backend: str,
    *,
    policy: Policy,
    page: Mapping[str, Any] | None,
    partition: str | None = None,
    queue: str | None = None,
    resources: Resources | None = None,
) -> Verdict:
    """The backend is one the policy lists, the partition or queue asked for is on its page
    (``partitions`` or ``queues``: PBS pages list queues in either; a name may repeat), and
    ``resources`` fit its row (model/pagefit.py: time limit, node counts)."""
    gate = "authorized"
    page_path = backendpage.path_of(backend)
    if backend not in policy.backends:
        known = ", ".join(policy.backends) or "none"
        return _refuse(
            gate,
            f"backend {backend!r} is not in campaign.yaml's backends ({known})",
            f"use --backend with one of them, or add {backend} to backends in campaign.yaml "
            f"with a page {page_path}, and commit",
        )
    if page is None:
        return _refuse(
            gate,
            f"{page_path} is missing",
            f"copy backends/TEMPLATE.md to {page_path}, fill in its facts, and commit",
        )
    asked = resources or Resources(partition=partition, queue=queue)
    for misfit in pagefit.misfits(asked, page, page_path=page_path):
        where = "" if misfit.key in pagefit.PLACES else f"resources.{misfit.key}: "
        return _refuse(gate, where + misfit.problem, misfit.fix)
    asked_for = ", ".join(f"{k} {v}" for k, v in (("partition", partition), ("queue", queue)) if v)
    where = f"; {asked_for} listed" if asked_for else ""
    return _ok(gate, f"backend {backend} authorized{where}")


def evaluate(
    request: Request,
    *,
    repo: RepoFacts,
    policy: Policy,
    require_smoke: bool,
    page: Mapping[str, Any] | None,
    fingerprints: Mapping[str, str],
    jobs: Sequence[Job],
    active: Sequence[JobState] | None,
    fixes: Mapping[str, str] | None = None,
    unasked: str | None = None,
    elsewhere: Sequence[Job] = (),
    index: Index | None = None,
    live: Sequence[Job] | None = None,
) -> tuple[Verdict, ...]:
    """Every gate's verdict, in order (--dry-run shows them all; submit stops at the first).
    ``unasked``: why ``active`` is None (a dry run on a machine that cannot reach the backend);
    ``elsewhere``: other clones' unfinished local jobs (no_sibling); ``index``: the ledger's
    per-target index of ``jobs`` (built from them when None), ``live`` its live jobs."""
    index = ledger_index.of(jobs, index)
    return (
        committed(repo, paths=request.paths, policy=policy),
        authorized(
            request.backend,
            policy=policy,
            page=page,
            partition=request.partition,
            queue=request.queue,
            resources=request.resources,
        ),
        smoke_first(
            request,
            fingerprints=fingerprints,
            jobs=jobs,
            require_smoke=require_smoke,
            index=index,
        ),
        no_sibling(
            request,
            active=active,
            jobs=jobs,
            unasked=unasked,
            elsewhere=elsewhere,
            job_of=_job_of(page),
            index=index,
            live=live,
        ),
        breaker(request, jobs=jobs, fingerprints=fingerprints, fixes=fixes, index=index),
        budget(request, policy=policy, page=page, jobs=jobs),
    )


def _job_of(page: Mapping[str, Any] | None) -> Callable[[str], str]:
    kind = registry.kind_of(page)
    return kind.job_of if kind is not None else str


def require(verdicts: Iterable[Verdict]) -> None:
    """Raise GateRefused for the first refusal (exit 1: the gate, why, what to do)."""
    for verdict in verdicts:
        if not verdict.passed:
            raise GateRefused(verdict=verdict)
