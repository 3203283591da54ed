"""The local backend as the registry lists it: pages with ``kind: local``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaignops.backends.base import Kind
from campaignops.backends.local import gpu
from campaignops.backends.local.backend import LocalBackend


def _serves(page: Mapping[str, Any]) -> bool:
    return page.get("kind") == "local"


# A local GPU job runs under the box executor, which retries its own OUT_OF_MEMORY.
KIND = Kind(name="local", serves=_serves, make=LocalBackend, retries_oom_itself=gpu.is_box_id)
