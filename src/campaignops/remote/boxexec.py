"""The box executor's entry point (moved to campaignops.remote.executor; split next)."""

from __future__ import annotations

import sys

from campaignops.remote.executor import *  # noqa: F403
from campaignops.remote.executor import main

if __name__ == "__main__":
    sys.exit(main())
