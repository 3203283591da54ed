"""What the box executor needs to stop an idle box by itself, and when `campaign status` says it
will (docs/runner.md, "Idle boxes stop themselves").

Off unless campaign.yaml sets ``budgets.idle_stop_minutes`` and the instance's page gives a
``self_stop`` command (campaignops.model.backendpage.self_stop): then every job placed on a box
carries both in its job.json (``idle_stop``), and the box's idle watcher
(campaignops.remote.idle) runs the command once no task of any job has run there for that long.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from campaignops.model import backendpage
from campaignops.model import policy as policy_mod


def job_setting(root: Path, page: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """job.json's ``idle_stop`` (``{"minutes", "command"}``), or None: the setting is off or
    the page gives no self-stop (campaign check's POLICY007 says so)."""
    minutes = policy_mod.read(root).idle_stop_minutes
    stop = backendpage.self_stop(page)
    if minutes is None or stop is None:
        return None
    return {"minutes": minutes, "command": stop.command}


def _clock(at: dt.datetime, now: dt.datetime) -> str:
    return at.strftime("%H:%M" if at.date() == now.date() else "%Y-%m-%d %H:%M") + " UTC"


def when(name: str, backend: str, idle_since: dt.datetime, now: dt.datetime, minutes: float) -> str:
    """The line `campaign status` prints for a held instance that will stop itself."""
    at = idle_since + dt.timedelta(minutes=minutes)
    why = (
        f"budgets.idle_stop_minutes {minutes:g} after its last task ended at "
        f"{_clock(idle_since, now)}"
    )
    if at > now:
        return (
            f"SSH instance {name} ({backend}) stops itself at {_clock(at, now)} if still idle "
            f"({why})"
        )
    return (
        f"SSH instance {name} ({backend}) was due to stop itself at {_clock(at, now)} ({why}) "
        "unless a job reached it first; its last job's directory on the box holds idle-stop.log"
    )
