"""The local job as its executor reads it back: ids, the ``#LOCAL`` directive lines, and how an
array's task states fold into the job's. The executor's command line
(campaignops.backends.local.executor) and its job files (jobfiles, state) import this, not
campaignops.backends.local.machine, which renders scripts for the runner: each query, submit and
executor process then starts without the job spec, the script renderer and the scheduler-call
modules; with Directives a named tuple, not a dataclass, a start took 0.102 s of CPU before and
0.084 s after (docs/decisions.md 193).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from campaignops.core.errors import CampaignError
from campaignops.model import walltime
from campaignops.model.states import FINISHED
from campaignops.model.states import worst as spec_worst
from campaignops.remote.supervision import KILL_WAIT_S  # the supervisor's default, rendered

EXECUTOR = "campaignops.backends.local.executor"
STARTED_BY = "executor.pid"  # written by submit once the executor is started
PREFIX = "#LOCAL "
# local-<n>-<6 hex>: the counter orders one clone's jobs; the random part keeps two clones of a
# campaign (each with its own .campaign/local) from both handing out local-1 into one ledger.
# Plain local-<n> ids from before are still read.
JOB_ID = re.compile(r"local-([0-9]+)(?:-[0-9a-f]{6})?")
_ARRAY = re.compile(r"0-([0-9]+)(?:%([1-9][0-9]*))?")
_SIGNAL = re.compile(r"B:([A-Z0-9]+)@([0-9]+)")


class LocalBackendError(CampaignError):
    """A job the local backend cannot render or read (bad directive, bad executor output)."""

    exit_code = 2


class Directives(NamedTuple):
    """What the executor needs to know of a job, read back from its ``#LOCAL`` lines. A typed
    named tuple, not a dataclass: every executor, query and submit process reads it, and
    ``dataclasses`` (with ``inspect``) would be the largest import of their start."""

    name: str
    workdir: str
    comment: str = ""
    log_dir: str = "logs"
    size: int = 1  # tasks 0 … size-1
    cap: int | None = None
    after: tuple[str, ...] = ()
    time: str | None = None  # [D-]HH:MM:SS (WALLTIME)
    warning: tuple[str, int] | None = None  # (signal name, seconds before the limit)
    kill_wait_s: int = KILL_WAIT_S
    mem_bytes: int | None = None  # per task

    @property
    def time_s(self) -> int | None:
        return None if self.time is None else walltime.parse(self.time, where="#LOCAL --time")


def _array(value: str) -> dict[str, Any]:
    match = _ARRAY.fullmatch(value)
    if match is None:
        raise ValueError("expected 0-N or 0-N%C")
    return {"size": int(match[1]) + 1, "cap": int(match[2]) if match[2] else None}


def _dependency(value: str) -> dict[str, Any]:
    kind, _, ids = value.partition(":")
    parents = tuple(ids.split(":"))
    if kind != "afterok" or not all(JOB_ID.fullmatch(p) for p in parents):
        raise ValueError("expected afterok:local-N-XXXXXX[:local-M-XXXXXX…]")
    return {"after": parents}


def _signal(value: str) -> dict[str, Any]:
    match = _SIGNAL.fullmatch(value)
    if match is None or not isinstance(getattr(signal, f"SIG{match[1]}", None), signal.Signals):
        raise ValueError("expected B:SIGNAL@SECONDS with a signal name such as USR1")
    return {"warning": (match[1], int(match[2]))}


_MEM = re.compile(r"([0-9]+)([KMGT]?)B?", re.IGNORECASE)
_MEM_UNITS = {"": 1024**2, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def mem_bytes(text: str) -> int:
    """A manifest's ``resources.mem`` in bytes, as Slurm reads ``--mem`` (a bare number: MiB)."""
    match = _MEM.fullmatch(str(text).strip())
    if match is None or int(match[1]) == 0:
        raise LocalBackendError(
            message=f"resources.mem {text!r} is not <n>[K|M|G|T]", hint="e.g. 4G, or 512M"
        )
    return int(match[1]) * _MEM_UNITS[match[2].upper()]


def _time(value: str) -> dict[str, Any]:
    try:
        walltime.parse(value)
    except walltime.WalltimeError as exc:
        raise ValueError(exc.message) from None
    return {"time": value}


_DIRECTIVES: dict[str, Callable[[str], dict[str, Any]]] = {
    "job-name": lambda v: {"name": v},
    "chdir": lambda v: {"workdir": v},
    "log-dir": lambda v: {"log_dir": v},
    "comment": lambda v: {"comment": v},
    "array": _array,
    "dependency": _dependency,
    "time": _time,
    "signal": _signal,
    "kill-wait": lambda v: {"kill_wait_s": int(v)},
    "mem": lambda v: {"mem_bytes": mem_bytes(v)},
}


def parse_directives(script: str) -> Directives:
    """The ``#LOCAL --key=value`` lines of the script's leading comment block."""
    found: dict[str, Any] = {}
    for line in script.splitlines()[1:]:
        if not line.startswith("#"):
            break  # like sbatch: directives end at the first command
        if not line.startswith(PREFIX):
            continue
        key, sep, value = line[len(PREFIX) :].removeprefix("--").partition("=")
        if key not in _DIRECTIVES or not sep:
            raise LocalBackendError(
                message=f"unknown directive {line!r}", hint="keys: " + ", ".join(_DIRECTIVES)
            )
        try:
            found.update(_DIRECTIVES[key](value))
        except ValueError as exc:
            raise LocalBackendError(message=f"bad directive {line!r}: {exc}") from None
    if "name" not in found or "workdir" not in found:
        raise LocalBackendError(
            message="the script has no #LOCAL --job-name= or --chdir= line",
            hint="render it with campaignops.backends.local.machine.render",
        )
    return Directives(**found)


def fold(tasks: Sequence[tuple[str, int | None]]) -> tuple[str, int | None]:
    """A whole array's (state, exit code) from its tasks': the worst state, and the exit code of
    its first task in that state (else the first non-zero code, as a cancel hides no failure)."""
    states = [state for state, _ in tasks]
    if not all(s in FINISHED for s in states):
        return ("PENDING" if all(s == "PENDING" for s in states) else "RUNNING"), None
    worst = spec_worst(states)
    own = next(code for state, code in tasks if state == worst)
    codes = [code for _, code in tasks if code is not None]
    return worst, own if own is not None else next((c for c in codes if c), 0 if codes else None)
