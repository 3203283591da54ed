"""Whether a target's smoke stands for its config as it is now: the one rule the smoke_first
gate refuses by (runner/smoke.py) and the stages view shows (views/stages.py), so STATUS.md
never calls a smoke good that `campaign submit` would not accept.
"""

from __future__ import annotations

from typing import Literal

from campaignops.model.ledger_index import Index

Standing = Literal["current", "older"]
CURRENT: Standing = "current"  # a smoke of this config COMPLETED with exit 0
OLDER: Standing = "older"  # only smokes of another (an older) config did


def standing(index: Index, target: str, fingerprint: str | None) -> Standing | None:
    """CURRENT when a smoke of the config ``fingerprint`` names passed for ``target`` (its own
    task COMPLETED with exit 0), OLDER when only smokes of other configs passed (or the config
    is not known: None), None when no smoke of ``target`` passed."""
    if fingerprint is not None and index.smoked(target, fingerprint) is not None:
        return CURRENT
    return OLDER if index.smoked(target, None) is not None else None
