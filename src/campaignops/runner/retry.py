"""The manifest's ``oom_retry``: a target whose task ran out of memory (host or GPU) or was
preempted is submitted again, after ``delay`` seconds, until it has had ``max_attempts`` attempts
(the first included: the experiment-queue's "max attempts before marking stuck"). A host OOM's
retry asks for ``memory_factor`` × the memory the attempt had, capped by its partition's or
queue's ``mem_per_node`` on the backend page.

The rule is in three small functions, apart from the bookkeeping in ``pending``: ``why_retried``
(which ended tasks qualify), ``raised_mem`` and ``mem_cap`` (the memory a host OOM's retry asks).

Pure: which retries are due is decided from the ledger and the manifests; ``status.refresh``
submits the due ones through ``campaign submit``'s own gates (a retry is a submission like any
other: from committed files, no sibling, the breaker and the budget still apply), recorded as
``attempt`` n of the same targets with ``retry_of`` the attempts it repeats.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from campaignops.core import schema
from campaignops.core.units import KIB
from campaignops.learn.rightsizing import RAISE, size_kib
from campaignops.model import accelerator, ledger
from campaignops.model.catalog import GPU_OOM as GPU_OOM  # re-exported: the retry rule's words
from campaignops.model.jobspec import Resources
from campaignops.model.states import STATE_CATEGORIES

OOM = "OUT_OF_MEMORY"
PREEMPTED = "PREEMPTED"
# oom_retry's bounds are the manifest schema's (campaign check reports a value past them): the
# runner reads a value past them as the default (a NaN, an infinity or 1e300 s of delay, which
# no datetime can add, crashed status --refresh).
_BOUNDS = schema.load(schema.MANIFEST)["properties"]["oom_retry"]["properties"]
MAX_FACTOR: float = _BOUNDS["memory_factor"]["maximum"]
MAX_DELAY_S: float = _BOUNDS["delay"]["maximum"]
HOST_OOM = STATE_CATEGORIES[OOM]  # "oom-host"
PREEMPTION = STATE_CATEGORIES[PREEMPTED]  # "preempted"


@dataclass(frozen=True)
class Policy:
    max_attempts: int
    delay_s: float
    # A host OOM's retry asks for this many times the memory (audit resources' own raise).
    memory_factor: float = RAISE


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
    # A host OOM: the memory is multiplied by this (None: a GPU OOM or a preemption, same memory)
    mem_factor: float | None = None
    # The memory the repeated attempt asked, where its intent records it (a retry's); None: the
    # manifest's, as planned
    had_mem: str | None = None


def why_retried(task: ledger.Task) -> str | None:
    """The retry rule: the category of an ended task that oom_retry submits again (a host OOM,
    a GPU OOM diagnosed from its log, a preemption), else None."""
    if task.state == OOM or task.category == HOST_OOM:
        return HOST_OOM
    if task.category == GPU_OOM:
        return GPU_OOM
    if task.state == PREEMPTED or task.category == PREEMPTION:
        return PREEMPTION
    return None


def mem_cap(page: Mapping[str, Any] | None, resources: Resources) -> str | None:
    """The most memory a job asking ``resources`` can get: its partition's or queue's
    ``mem_per_node`` on the backend page, else None (no cap known)."""
    asked = resources.partition or resources.queue
    row = accelerator.row(page, asked, resources.qos) if asked else None
    found = row.get("mem_per_node") if row else None
    return found if isinstance(found, str) and size_kib(found, bare="M") else None


def raised_mem(had: str | None, factor: float, cap: str | None = None) -> str | None:
    """``factor`` × ``had`` in whole MiB (whole GiB written as such), never above ``cap``;
    None when ``had`` is no size (nothing to multiply: the retry asks what it asked)."""
    kib = size_kib(had, bare="M")
    if kib is None:
        return None
    mib = math.ceil(kib * factor / KIB["M"])
    limit = size_kib(cap, bare="M")
    if cap is not None and limit is not None and mib * KIB["M"] > limit:
        return cap
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def _had_mem(job: ledger.Job) -> str | None:
    """The memory ``job`` asked, where its intent records it (a retry's), else None. Not the
    accounting's ReqMem: Slurm may write it per CPU (``2Gc``), and the manifest's is per job."""
    resources = job.record.get("resources")
    mem = resources.get("mem") if isinstance(resources, Mapping) else None
    return mem if isinstance(mem, str) else None


def policy_of(doc: Any) -> Policy | None:
    """The manifest's oom_retry, when it asks for a retry at all (two attempts or more)."""
    found = doc.get("oom_retry") if isinstance(doc, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    attempts, delay = found.get("max_attempts", 1), found.get("delay", 0)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 2:
        return None
    ok = (
        isinstance(delay, (int, float))
        and not isinstance(delay, bool)
        and 0 <= delay <= MAX_DELAY_S
    )
    factor = found.get("memory_factor", RAISE)
    number = isinstance(factor, (int, float)) and not isinstance(factor, bool)
    good = number and 1 <= factor <= MAX_FACTOR  # YAML's .inf and .nan are floats: neither
    return Policy(
        max_attempts=attempts,
        delay_s=float(delay) if ok else 0.0,
        memory_factor=float(factor) if good else RAISE,
    )


def attempt_of(job: ledger.Job) -> int:
    value = job.record.get("attempt")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def attempts_made(job: ledger.Job, task: ledger.Task) -> int:
    """How many attempts of ``task``'s target ``job`` ends: the submission's own attempt number,
    and each attempt its box executor ran again within the job (``task.tries``)."""
    return attempt_of(job) + len(task.tries)


# One retry submission's group: manifest, stage, backend, attempt, memory factor, memory had.
_Key = tuple[str, str, str, int, float | None, str | None]


def pending(
    jobs: Iterable[ledger.Job],
    *,
    manifest: Callable[[str], Any],
    now: dt.datetime,
    retried_itself: Callable[[ledger.Job], bool] = lambda job: False,
) -> tuple[list[Due], list[Due]]:
    """(due now, still waiting for their delay): one entry per manifest, stage, backend,
    attempt and memory. A target qualifies when its latest attempt at the stage ended as
    ``why_retried`` says, that attempt is below max_attempts, and nothing was submitted for it
    since. A job on a backend whose own executor retries by itself (``retried_itself``: a box
    executor) has had its attempts there: its out-of-memory end is final."""
    latest: dict[tuple[str, str, str], ledger.Job] = {}
    for job in sorted(jobs, key=ledger.Job.sort_key):
        where = job.text("manifest")
        if where and job.stage and not job.error:
            for target in job.targets:
                latest[(where, job.stage, target)] = job
    policies: dict[str, Policy | None] = {}
    groups: dict[_Key, tuple[list[str], set[str], dt.datetime]] = {}
    for (where, stage, target), job in latest.items():
        task = job.task(target)
        why = why_retried(task) if task is not None else None
        # Asked last: whether the executor retried by itself reads the backend's page.
        if task is None or why is None or retried_itself(job):
            continue
        if where not in policies:
            policies[where] = policy_of(manifest(where))
        rule = policies[where]
        attempt = attempt_of(job)
        if rule is None or attempt >= rule.max_attempts:
            continue
        ended = ledger.parse_time(task.ended) or ledger.parse_time(job.text("ended")) or now
        at = ended + dt.timedelta(seconds=rule.delay_s)
        factor = rule.memory_factor if why == HOST_OOM else None
        had = _had_mem(job) if factor else None
        key = (where, stage, job.backend or "local", attempt + 1, factor, had)
        targets, of, last = groups.get(key, ([], set(), at))
        targets.append(target)
        of.add(job.ledger_id)
        groups[key] = (targets, of, max(last, at))
    due: list[Due] = []
    waiting: list[Due] = []
    for (where, stage, backend, attempt, factor, had), (targets, of, at) in sorted(
        groups.items(), key=lambda item: tuple(str(part) for part in item[0])
    ):
        entry = Due(
            manifest=where,
            stage=stage,
            backend=backend,
            targets=tuple(targets),
            attempt=attempt,
            of=tuple(sorted(of)),
            at=at,
            mem_factor=factor,
            had_mem=had,
        )
        (due if at <= now else waiting).append(entry)
    return due, waiting
