"""Moved to ``campaignops.backends.local.gpu`` (the One house layout, 2026-11): kept for one release.

A job started before an upgrade may still run ``python -m campaignops.runner.localbox …``; this
forwards it to the new module unchanged (docs/decisions.md, "Old module paths"). By name only
(runpy), so the runner imports no backend.
"""

from __future__ import annotations

import runpy

NEW = "campaignops.backends.local.gpu"

if __name__ == "__main__":
    runpy.run_module(NEW, run_name="__main__", alter_sys=True)
