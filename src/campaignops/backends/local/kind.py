"""The local backend as the registry lists it: pages with ``kind: local``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Kind


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("kind") == "local"


def _make(root: Path, name: str) -> Backend:
    # Imported when asked, not with the registry: campaign check loads every kind (start-up time).
    from campaignops.backends.local.backend import LocalBackend

    return LocalBackend(root, name)


def _boxed(job_id: str) -> bool:
    from campaignops.backends.local import gpu

    return gpu.is_box_id(job_id)


def _ran_here(root: Path, job_id: str) -> bool:
    """This checkout's executor has the job: its directory under the local state root (another
    clone's local job ran on its machine: runner/elsewhere.py)."""
    from campaignops.backends.local import gpu
    from campaignops.backends.local.machine import STATE_DIR

    state = root / STATE_DIR
    return (state / gpu.BOX_DIR / job_id if gpu.is_box_id(job_id) else state / job_id).is_dir()


# A local GPU job runs under the box executor, which retries its own OUT_OF_MEMORY.
KIND = Kind(
    name="local",
    serves=_serves,
    make=_make,
    retries_oom_itself=_boxed,
    ran_here=_ran_here,
    watch_pause_s=2.0,  # its query reads this machine's executor files
)
