"""The Grid Engine backend as the registry lists it: pages with ``kind: gridengine``, its task
references (``12.3``: job 12's Grid Engine task 3, the campaign's index 2) and its array ids."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Kind
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import Resources

# JOB.TASK as qstat and qacct name one task (Grid Engine's task ids start at 1).
TASK = re.compile(r"(?P<job>\d{1,12})\.(?P<task>\d{1,7})\Z")


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("kind") == "gridengine"


def _make(root: Path, name: str) -> Backend:
    # Imported when asked, not with the registry: campaign check loads every kind (start-up time).
    from campaignops.backends.gridengine.backend import GridEngineBackend

    return GridEngineBackend(root, name)


def _unsayable(res: Resources) -> CampaignError | None:
    from campaignops.backends.gridengine import render  # when asked, as _make

    return render.unsayable(res)


def _unnamable(name: str) -> CampaignError | None:
    from campaignops.backends.gridengine import render  # when asked, as _make

    return render.unnamable(name)


def _task_ref(ref: str) -> tuple[str, int] | None:
    found = TASK.match(ref)
    if found is None or int(found["task"]) < 1:
        return None
    return found["job"], int(found["task"]) - 1


def _job_of(job_id: str) -> str:
    return job_id.split(".", 1)[0]  # 12.3 → 12


KIND = Kind(
    name="gridengine",
    serves=_serves,
    make=_make,
    task_ref=_task_ref,
    job_of=_job_of,
    raw_submit=frozenset({"qsub"}),
    raw_cancel=frozenset({"qdel"}),
    unsayable=_unsayable,
    unnamable=_unnamable,
)
