"""The manifest's ``oom_retry``: a target whose task ran OUT_OF_MEMORY is submitted again, after
``delay`` seconds, until it has had ``max_attempts`` attempts (the first included: the
experiment-queue's "max attempts before marking stuck").

Pure: which retries are due is decided from the ledger and the manifests; ``status.refresh``
submits the due ones through ``campaign submit``'s own gates (a retry is a submission like any
other: from committed files, no sibling, the breaker and the budget still apply), recorded as
``attempt`` n of the same targets with ``retry_of`` the attempts it repeats.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from campaignops.model import ledger

OOM = "OUT_OF_MEMORY"


@dataclass(frozen=True)
class Policy:
    max_attempts: int
    delay_s: float


@dataclass(frozen=True)
class Due:
    """One retry submission: these targets of this manifest, at this stage, on this backend."""

    manifest: str
    stage: str
    backend: str
    targets: tuple[str, ...]
    attempt: int
    of: tuple[str, ...]  # ledger ids of the attempts repeated
    at: dt.datetime  # when the delay has passed for every target in it


def policy_of(doc: Any) -> Policy | None:
    """The manifest's oom_retry, when it asks for a retry at all (two attempts or more)."""
    found = doc.get("oom_retry") if isinstance(doc, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    attempts, delay = found.get("max_attempts", 1), found.get("delay", 0)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 2:
        return None
    ok = isinstance(delay, (int, float)) and not isinstance(delay, bool) and delay >= 0
    return Policy(max_attempts=attempts, delay_s=float(delay) if ok else 0.0)


def attempt_of(job: ledger.Job) -> int:
    value = job.record.get("attempt")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def pending(
    jobs: Iterable[ledger.Job],
    *,
    manifest: Callable[[str], Any],
    now: dt.datetime,
    retried_itself: Callable[[ledger.Job], bool] = lambda job: False,
) -> tuple[list[Due], list[Due]]:
    """(due now, still waiting for their delay): one entry per manifest, stage, backend and
    attempt. A target qualifies when its latest attempt at the stage ran OUT_OF_MEMORY, that
    attempt is below max_attempts, and nothing was submitted for it since. A job on a backend
    whose own executor retries by itself (``retried_itself``: a box executor) has had its attempts there:
    its OUT_OF_MEMORY is final."""
    latest: dict[tuple[str, str, str], ledger.Job] = {}
    for job in sorted(jobs, key=ledger.Job.sort_key):
        where = job.text("manifest")
        if where and job.stage and not job.error:
            for target in job.targets:
                latest[(where, job.stage, target)] = job
    policies: dict[str, Policy | None] = {}
    groups: dict[tuple[str, str, str, int], tuple[list[str], set[str], dt.datetime]] = {}
    for (where, stage, target), job in latest.items():
        task = job.task(target)
        # Asked last: whether the executor retried by itself reads the backend's page.
        if task is None or task.state != OOM or retried_itself(job):
            continue
        if where not in policies:
            policies[where] = policy_of(manifest(where))
        rule = policies[where]
        attempt = attempt_of(job)
        if rule is None or attempt >= rule.max_attempts:
            continue
        ended = ledger.parse_time(task.ended) or ledger.parse_time(job.text("ended")) or now
        at = ended + dt.timedelta(seconds=rule.delay_s)
        key = (where, stage, job.backend or "local", attempt + 1)
        targets, of, last = groups.get(key, ([], set(), at))
        targets.append(target)
        of.add(job.ledger_id)
        groups[key] = (targets, of, max(last, at))
    due: list[Due] = []
    waiting: list[Due] = []
    for (where, stage, backend, attempt), (targets, of, at) in sorted(groups.items()):
        entry = Due(
            manifest=where,
            stage=stage,
            backend=backend,
            targets=tuple(targets),
            attempt=attempt,
            of=tuple(sorted(of)),
            at=at,
        )
        (due if at <= now else waiting).append(entry)
    return due, waiting
