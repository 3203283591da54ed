"""The job states every backend reports in (Slurm's names), which of them are final, how an
array's tasks fold into one, and which failure category a final state names on its own.

Written once, here: the runner, the ledger's fold, diagnosis and right-sizing import it. The
box executor (remote/jobstate.py, standard library only) carries its own copy of the states it
writes; tests/remote/test_boxexec_detach.py keeps that copy from drifting.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

# Slurm's state names, used on every backend.
STATES = (
    "PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY",
    "CANCELLED", "PREEMPTED", "NODE_FAIL", "UNKNOWN",
)  # fmt: skip
FINISHED = frozenset(
    {"COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "PREEMPTED", "NODE_FAIL"}
)
# A finished array's state is that of its worst task, in this order, on every backend: a lost
# node hides nothing, a cancel hides a timeout, and so on down to a plain failure.
WORST_FIRST = (
    "NODE_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "PREEMPTED", "FAILED", "UNKNOWN",
)  # fmt: skip

# Final states that name a failure category on their own (the failure catalog's categories):
# Slurm's, and the words other schedulers use for the same ends (Kubernetes' OOMKilled and
# DeadlineExceeded, Slurm's BOOT_FAIL), as a verdict may carry them.
STATE_CATEGORIES = MappingProxyType(
    {
        "OUT_OF_MEMORY": "oom-host",
        "OOMKILLED": "oom-host",
        "TIMEOUT": "timeout",
        "DEADLINE": "timeout",
        "DEADLINEEXCEEDED": "timeout",
        "PREEMPTED": "preempted",
        "NODE_FAIL": "node-failure",
        "BOOT_FAIL": "node-failure",
    }
)


def worst(states: Iterable[str]) -> str:
    """The worst of finished tasks' states (COMPLETED when none is worse)."""
    seen = set(states)
    return next((w for w in WORST_FIRST if w in seen), "COMPLETED")
