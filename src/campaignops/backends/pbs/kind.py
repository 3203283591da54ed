"""The PBS Pro backend as the registry lists it: pages with ``scheduler: pbs``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.backends.base import Backend, Kind
from campaignops.backends.pbs import backend


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("scheduler") == "pbs"


def _make(root: Path, name: str) -> Backend:
    return backend  # the module is the backend: the same for every checkout


KIND = Kind(name="pbs", serves=_serves, make=_make)
