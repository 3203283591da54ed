"""The PBS Pro backend as the registry lists it: pages with ``scheduler: pbs``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Kind
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import Resources

# Exit codes the server sets when it kills a job over a limit (negative: not the task's;
# OpenPBS job.h: JOB_EXEC_KILL_MEM -27, JOB_EXEC_KILL_VMEM -26, JOB_EXEC_KILL_WALLTIME -29).
EXIT_CATEGORIES = {-27: "oom-host", -26: "oom-host", -29: "timeout"}


def _category(exit_code: int | None, reason: str | None) -> str | None:
    return None if exit_code is None else EXIT_CATEGORIES.get(exit_code)


# A subjob as qstat names it: 4242[3].server (the array is recorded as 4242[].server).
SUBJOB = re.compile(r"(?P<number>\d+)\[(?P<index>\d{1,7})\](?P<server>.*)\Z")


def _task_ref(ref: str) -> tuple[str, int] | None:
    found = SUBJOB.match(ref)
    return (f"{found['number']}[]{found['server']}", int(found["index"])) if found else None


# An array or one of its subjobs: 123[].server, 123[4].server (the array is recorded as 123[]).
ARRAY = re.compile(r"(?P<number>\d+)\[\d*\](?P<server>.*)\Z")


def _job_of(job_id: str) -> str:
    found = ARRAY.match(job_id)
    return f"{found['number']}[]{found['server']}" if found else job_id


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("scheduler") == "pbs"


def _make(root: Path, name: str) -> Backend:
    # Imported when asked, not with the registry: campaign check loads every kind (start-up time).
    from campaignops.backends.pbs import backend

    return backend  # the module is the backend: the same for every checkout


def _unsayable(res: Resources) -> CampaignError | None:
    from campaignops.backends.pbs import backend  # when asked, as _make

    return backend.unsayable(res)


def _unnamable(name: str) -> CampaignError | None:
    from campaignops.backends.pbs import backend  # when asked, as _make

    return backend.unnamable(name)


KIND = Kind(
    name="pbs",
    serves=_serves,
    make=_make,
    verdict_category=_category,
    task_ref=_task_ref,
    job_of=_job_of,
    raw_submit=frozenset({"qsub"}),
    raw_cancel=frozenset({"qdel"}),
    unsayable=_unsayable,
    unnamable=_unnamable,
)
