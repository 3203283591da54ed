"""A host OOM's retry asks for more memory: the planned jobs with ``resources.mem`` raised by
the manifest's ``oom_retry.memory_factor`` (runner/retry.py's rule), so the gates, the rendered
script and the intent record all carry the raised figure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from campaignops.runner import dispatch, plan, retry


def for_retry(
    jobs: Sequence[plan.PlannedJob], asked: dispatch.Retry | None, *, page: Mapping[str, Any] | None
) -> list[plan.PlannedJob]:
    """``jobs`` as a retry submits them: a host OOM's with its memory raised, others as planned."""
    if asked is None or asked.mem_factor is None:
        return list(jobs)
    return raised(jobs, factor=asked.mem_factor, had=asked.had_mem, page=page)


def raised(
    jobs: Sequence[plan.PlannedJob],
    *,
    factor: float,
    had: str | None,
    page: Mapping[str, Any] | None,
) -> list[plan.PlannedJob]:
    """``jobs`` with ``factor`` × the memory the repeated attempt had (``had``; None: each
    job's planned ``resources.mem``), capped by the page's limit for its partition or queue.
    A job with no memory to multiply keeps its request."""
    out = []
    for job in jobs:
        asked = job.spec.resources
        mem = retry.raised_mem(had or asked.mem, factor, retry.mem_cap(page, asked))
        if mem is None:
            out.append(job)
            continue
        spec = dataclasses.replace(job.spec, resources=dataclasses.replace(asked, mem=mem))
        out.append(dataclasses.replace(job, spec=spec))
    return out
