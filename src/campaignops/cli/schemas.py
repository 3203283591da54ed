"""The output schemas of ``--format json`` (campaignops/schemas/output/, shipped in the wheel).

``output_schema("lesson-add")`` is the JSON Schema every document ``campaign lesson add
--format json`` prints validates against; its ``schema`` field says ``campaignops/lesson-add/v1``.
A change that breaks a schema is a new file, ``<command>.v2.schema.json`` (docs/formats.md).
"""

from __future__ import annotations

import copy
from importlib import resources
from typing import Any

from campaignops.core import schema
from campaignops.core.errors import UsageError

OUTPUT_DIR = "output"
VERSION = "v1"


def names() -> tuple[str, ...]:
    """The commands with an output schema of this version, sorted."""
    suffix = f".{VERSION}.schema.json"
    folder = resources.files("campaignops.schemas").joinpath(OUTPUT_DIR)
    return tuple(
        sorted(f.name.removesuffix(suffix) for f in folder.iterdir() if f.name.endswith(suffix))
    )


def output_schema(command: str) -> dict[str, Any]:
    """The output schema of ``command`` (``check``, ``audit-resources``, …): a copy to keep."""
    if command not in names():
        raise UsageError(
            message=f"no output schema for {command!r}",
            hint=f"one of: {', '.join(names())}",
        )
    return copy.deepcopy(schema.load(f"{OUTPUT_DIR}/{command}.{VERSION}"))
