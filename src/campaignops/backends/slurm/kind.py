"""The Slurm backend as the registry lists it: pages with ``scheduler: slurm``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Kind
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import Resources

# Pending reasons a job can never leave: no log exists, the reason is the evidence (Slurm's
# job_reason_codes page).
REASON_CATEGORIES = {
    "DependencyNeverSatisfied": "dependency",
    "BadConstraints": "scheduler-rejected",
    "InvalidAccount": "scheduler-rejected",
    "InvalidQOS": "scheduler-rejected",
    "PartitionTimeLimit": "scheduler-rejected",
}
QUOTA_REASONS = ("QOSMax", "QOSGrp", "AssocGrp", "AssocMax")


def _category(exit_code: int | None, reason: str | None) -> str | None:
    reason = reason or ""
    if reason in REASON_CATEGORIES:
        return REASON_CATEGORIES[reason]
    return "quota-limit" if reason.startswith(QUOTA_REASONS) else None


def _job_of(job_id: str) -> str:
    return job_id.split("_", 1)[0]  # an array task 123_4 or the array 123_[0-9] → 123


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("scheduler") == "slurm"


def _make(root: Path, name: str) -> Backend:
    # Imported when asked, not with the registry: campaign check loads every kind (start-up time).
    from campaignops.backends.slurm import backend

    return backend  # the module is the backend: the same for every checkout


def _unsayable(res: Resources) -> CampaignError | None:
    from campaignops.backends.slurm import backend  # when asked, as _make

    return backend.unsayable(res)


def _unnamable(name: str) -> CampaignError | None:
    from campaignops.backends.slurm import backend  # when asked, as _make

    return backend.unnamable(name)


KIND = Kind(
    name="slurm",
    serves=_serves,
    make=_make,
    verdict_category=_category,
    job_of=_job_of,
    raw_submit=frozenset({"sbatch"}),
    raw_cancel=frozenset({"scancel"}),
    # srun inside a job's allocation runs a step of it; outside one it asks for a new allocation.
    allocation=("srun", ("SLURM_JOB_ID", "SLURM_JOBID")),
    unsayable=_unsayable,
    unnamable=_unnamable,
)
