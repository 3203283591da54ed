"""The box executor's entry point: ``python3 boxexec.py CMD …`` here (a local GPU job; also
``python -m campaignops.remote.boxexec``), and the ``__main__.py`` of the zip the ssh backend
places on a box (campaignops.remote.artifact). The commands are campaignops.remote.commands.

Standard library only, Python 3.8+. An executor started from this path before the split (a local
GPU job still running) starts its next task's ``wrap`` here too: this path stays.
"""

from __future__ import annotations

import sys

from campaignops.remote.commands import main

if __name__ == "__main__":
    sys.exit(main())
