"""The policy (campaign.yaml) as a typed record, tolerant of invalid input.

POLICY checks report what is wrong with the file; everything else still needs *a* policy to run,
so values that are missing or of the wrong type fall back to the documented defaults here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError

DEFAULT_STALE_AFTER_MONTHS = 6
DEFAULT_IDLE_WARN_MINUTES = 30  # a held SSH box with no task for this long: status warns
# budgets.idle_stop_minutes: at most a week (the schema's maximum); a fraction is allowed, so a
# test can run the box's idle stop in seconds. Off (None) by default.
IDLE_STOP_MOST_MINUTES = 10080

# The commands that change something outside the repository, which `campaign mcp` offers an
# agent only when campaign.yaml's ``agents: {may: [...]}`` names them (docs/formats.md).
AGENT_MAY = ("submit", "cancel", "release", "lesson add", "pull")
# status.recent_jobs: the finished jobs STATUS.md and `campaign status` list one by one (the
# rest are counted), so the views follow the live work, not the campaign's whole history.
DEFAULT_RECENT_JOBS = 50


@dataclass(frozen=True)
class Policy:
    name: str = ""
    backends: tuple[str, ...] = ()
    smoke_backend: str | None = None
    notify_email: str | None = None
    stale_after_months: int = DEFAULT_STALE_AFTER_MONTHS
    require_pushed: bool = True
    max_parallel: int | None = None
    require_smoke: bool = True
    requeue: bool = False
    warning_seconds: int | None = None
    smoke_max_minutes: int | None = None
    recent_jobs: int = DEFAULT_RECENT_JOBS
    cloud_usd: float | None = None  # budgets.cloud_usd: the campaign's cap on rented-compute USD
    hpc_allocation_cap_percent: float | None = None  # budgets.: share of an HPC allocation
    # budgets.allocations: each HPC backend's allocation, in its page's charging unit.
    allocations: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    idle_warn_minutes: int = DEFAULT_IDLE_WARN_MINUTES  # budgets.idle_warn_minutes
    # budgets.idle_stop_minutes: a box idle this long runs its page's self_stop; None: never
    idle_stop_minutes: float | None = None
    globs: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType(dict(layout.DEFAULT_GLOBS))
    )
    # agents.may: the mutating commands `campaign mcp` offers (names of AGENT_MAY; others ignored)
    agents_may: tuple[str, ...] = ()
    found: bool = False


def agents_may(data: Any) -> tuple[str, ...]:
    """campaign.yaml's ``agents.may`` as written (strings only); POLICY checks name the unknown."""
    agents = data.get("agents") if isinstance(data, dict) else None
    may = agents.get("may") if isinstance(agents, dict) else None
    return _str_list(may) or ()


def backend_for(policy: Policy, stage: str, manifest: object, *, asked: str | None = None) -> str:
    """Where a submission goes: ``asked`` (submit's --backend), else the manifest's own
    ``backend``, else smoke_backend for a smoke, else the first authorized backend, else local.
    The one rule `campaign submit` follows and a review prices by; a manifest that is not yet
    validated may be anything (a ``backend`` that is no string names none)."""
    named = manifest.get("backend") if isinstance(manifest, Mapping) else None
    return (
        asked
        or (named if isinstance(named, str) else None)
        or (policy.smoke_backend if stage == "smoke" else None)
        or (policy.backends[0] if policy.backends else "local")
    )


def _str_list(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _number(value: Any, *, most: float | None = None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    if most is not None and value > most:
        return None
    try:
        return float(value)
    except OverflowError:  # an integer past a float's range (10**400): no usable number
        return None


def _budgets(data: Any) -> tuple[float | None, float | None, Mapping[str, float]]:
    if not isinstance(data, dict):
        return None, None, MappingProxyType({})
    given = data.get("allocations")
    sizes: dict[str, float] = {}
    for name, value in given.items() if isinstance(given, dict) else ():
        size = _number(value)
        if size:  # a zero or unusable size names no allocation
            sizes[str(name)] = size
    return (
        _number(data.get("cloud_usd")),
        _number(data.get("hpc_allocation_cap_percent"), most=100),
        MappingProxyType(sizes),
    )


def _idle_stop(data: Any) -> float | None:
    """budgets.idle_stop_minutes, or None (unset, zero, or no finite number up to a week: the
    POLICY001 finding names it)."""
    value = _number(data.get("idle_stop_minutes"), most=IDLE_STOP_MOST_MINUTES) if data else None
    return value if value and math.isfinite(value) else None


def _recent_jobs(data: Any) -> int:
    value = data.get("recent_jobs") if isinstance(data, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return DEFAULT_RECENT_JOBS


def read(root: Path) -> Policy:
    """The policy of the campaign at ``root``; the defaults (``found`` False) when campaign.yaml
    cannot be read or parsed (campaign check says why)."""
    try:
        text = (root / layout.POLICY_FILE).read_text(encoding="utf-8")
        return from_data(yamldoc.load(text, path=layout.POLICY_FILE))
    except (CampaignError, OSError, UnicodeDecodeError):
        return Policy()


def from_data(data: Any, *, found: bool = True) -> Policy:
    """Build a Policy from parsed YAML, using defaults wherever a value is unusable."""
    if not isinstance(data, dict):
        return Policy(found=found)
    globs = dict(layout.DEFAULT_GLOBS)
    paths = data.get("paths")
    if isinstance(paths, dict):
        for kind in layout.CONFIGURABLE:
            value = _str_list(paths.get(kind))
            if value is not None:
                globs[kind] = value
    stale = data.get("stale_after_months")
    stages = data.get("stages") if isinstance(data.get("stages"), dict) else {}
    max_parallel = stages.get("max_parallel") if isinstance(stages, dict) else None
    name = data.get("name")
    notify = data.get("notify_email")
    smoke = data.get("smoke_backend")
    warning = stages.get("warning_seconds") if isinstance(stages, dict) else None
    smoke_max = stages.get("smoke_max_minutes") if isinstance(stages, dict) else None
    cloud_usd, cap_percent, allocations = _budgets(data.get("budgets"))
    budgets = data.get("budgets")
    idle = budgets.get("idle_warn_minutes") if isinstance(budgets, dict) else None
    return Policy(
        idle_stop_minutes=_idle_stop(budgets if isinstance(budgets, dict) else None),
        idle_warn_minutes=(
            idle
            if isinstance(idle, int) and not isinstance(idle, bool) and idle > 0
            else DEFAULT_IDLE_WARN_MINUTES
        ),
        recent_jobs=_recent_jobs(data.get("status")),
        cloud_usd=cloud_usd,
        hpc_allocation_cap_percent=cap_percent,
        allocations=allocations,
        require_smoke=not (isinstance(stages, dict) and stages.get("require_smoke") is False),
        requeue=isinstance(stages, dict) and stages.get("requeue") is True,
        warning_seconds=warning if isinstance(warning, int) and warning > 0 else None,
        smoke_max_minutes=(
            smoke_max
            if isinstance(smoke_max, int) and not isinstance(smoke_max, bool) and smoke_max > 0
            else None
        ),
        name=name if isinstance(name, str) else "",
        backends=_str_list(data.get("backends")) or (),
        smoke_backend=smoke if isinstance(smoke, str) else None,
        notify_email=notify if isinstance(notify, str) else None,
        stale_after_months=(
            stale
            if isinstance(stale, int) and not isinstance(stale, bool) and stale > 0
            else DEFAULT_STALE_AFTER_MONTHS
        ),
        require_pushed=data.get("require_pushed") is not False,
        max_parallel=(max_parallel if isinstance(max_parallel, int) and max_parallel > 0 else None),
        globs=MappingProxyType(globs),
        agents_may=tuple(n for n in agents_may(data) if n in AGENT_MAY),
        found=found,
    )
