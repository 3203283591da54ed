"""A contract replay of OpenPBS (qsub, qstat, qselect, qdel): no PBS server can run here.

Put ``BIN`` first on PATH and ``STATE_ENV`` in the environment; ``cycle`` plays the scheduler's
pass that runs every queued job whose dependencies are met (docs/runner.md, "PBS").
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
STATE_ENV = "PBS_CONTRACT_STATE"


def cycle(env: Mapping[str, str] | None = None) -> list[str]:
    """Run every queued job to its end (one scheduling pass); returns the job ids run."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "contract_replay_server.py")],
        env=dict(env if env is not None else os.environ),
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()
