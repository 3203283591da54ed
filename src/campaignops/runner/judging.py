"""Judging one submission: each planned job's gate verdicts, and its script as a dry run shows
it, against the facts submit's preflight read once (the repository, the ledger, the live jobs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import charging
from campaignops.backends import registry as backends
from campaignops.core.errors import CampaignError
from campaignops.model import catalog, ledger
from campaignops.model import policy as policy_mod
from campaignops.model.jobspec import JobState
from campaignops.runner import gates, gitfacts, plan
from campaignops.runner.dispatch import Planned

# What a dry run's script shows where the ledger id and commit will go: a syntactically valid
# id and commit, so every backend's validator accepts the preview.
PREVIEW_LEDGER_ID = "L00000000T000000Z-000000000000"
PREVIEW_COMMIT = "0" * 40


class CatalogFixes(Mapping[str, str]):
    """failures.yaml's fix per entry id, read only if the breaker trips and asks (a catalog
    that does not parse gives none: campaign check reports it)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._fixes: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._fixes is None:
            try:
                entries = catalog.load(self._root).entries
            except CampaignError:
                entries = ()
            self._fixes = {e.id: e.fix for e in entries if e.fix}
        return self._fixes

    def __getitem__(self, key: str) -> str:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


@dataclass(frozen=True)
class Facts:
    """What every job of one submission is judged against, read once."""

    manifest: str
    stage: str
    backend: str
    override: str | None  # the reason that passes a tripped breaker or budget
    policy: policy_mod.Policy
    page: Mapping[str, Any] | None
    paths: tuple[str, ...]
    repo: gitfacts.RepoFacts
    fingerprints: dict[str, str]
    history: ledger.Ledger
    active: (
        tuple[JobState, ...] | None
    )  # the no_sibling query's live jobs (None: not asked, ``unreachable`` says why)
    unreachable: str | None
    fixes: Mapping[str, str]
    elsewhere: tuple[ledger.Job, ...] = ()  # other clones' unfinished local jobs (no_sibling)
    hardware_gaps: Mapping[str, str] = dataclasses.field(default_factory=dict)  # per group


def judged(
    be: backends.Backend, jobs: Sequence[plan.PlannedJob], facts: Facts
) -> tuple[Planned, ...]:
    """Each job's gate verdicts, and its script as a dry run shows it."""
    policy, page, name = facts.policy, facts.page, facts.backend
    planned: list[Planned] = []
    earlier = 0.0  # phases are judged together: the budget counts the ones before
    for job in jobs:
        request = gates.Request(
            campaign=policy.name,
            manifest=facts.manifest,
            stage=facts.stage,
            backend=name,
            targets=job.targets,
            paths=facts.paths,
            partition=job.spec.resources.partition,
            queue=job.spec.resources.queue,
            override=facts.override,
            time_s=job.spec.time_s,
            smoke_max_minutes=policy.smoke_max_minutes,
            resources=job.spec.resources,
            earlier_cost=earlier,
            hardware_gap=facts.hardware_gaps.get(job.group),
        )
        earlier += (
            charging.estimate(job.spec.resources, len(job.targets), job.spec.time_s, page) or 0.0
        )
        unreachable = facts.unreachable
        verdicts = gates.evaluate(
            request,
            repo=facts.repo,
            policy=policy,
            require_smoke=policy.require_smoke,
            page=page,
            fingerprints=facts.fingerprints,
            jobs=facts.history.jobs,
            index=facts.history.index,
            live=ledger.live(facts.history),
            active=facts.active,
            fixes=facts.fixes,
            unasked=unreachable and f"this machine cannot reach backend {name} ({unreachable})",
            elsewhere=facts.elsewhere,
        )
        comment = f"{PREVIEW_LEDGER_ID} {facts.repo.head or PREVIEW_COMMIT}"
        preview = dataclasses.replace(job.spec, comment=comment)
        planned.append(Planned(job=job, verdicts=verdicts, script=be.render(preview)))
    return tuple(planned)
