"""Calling a scheduler command: bounded retries with exponential backoff for transient errors.

A scheduler that stays down is reported (SchedulerUnavailable, exit 2) and nothing is recorded
as submitted. Only errors known to be transient are retried: a rejected job is not.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from campaignops.errors import CampaignError

TRANSIENT = re.compile(
    r"socket timed out|resource temporarily unavailable|unable to contact slurm controller"
    r"|connection refused|try again|temporarily unavailable|communication failure"
    r"|pbs_connect|cannot connect to server",
    re.IGNORECASE,
)
ATTEMPTS = 4
BASE_DELAY_S = 1.0
TIMEOUT_S = 120.0


class SchedulerUnavailable(CampaignError):
    """The scheduler did not answer after every retry."""

    exit_code = 2


class SchedulerRejected(CampaignError):
    """The scheduler answered and refused (bad partition, account, limits)."""

    exit_code = 1


@dataclass(frozen=True)
class Call:
    argv: tuple[str, ...]
    stdout: str
    attempts: int


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=TIMEOUT_S)


def call(
    argv: Sequence[str],
    *,
    attempts: int = ATTEMPTS,
    base_delay: float = BASE_DELAY_S,
    run: Runner = _run,
    sleep: Callable[[float], None] = time.sleep,
) -> Call:
    """Run ``argv``; retry transient failures (delays base, 2×base, 4×base …); raise otherwise."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            proc = run(argv)
        except FileNotFoundError:
            raise SchedulerUnavailable(
                message=f"{argv[0]}: command not found",
                hint="run campaign submit on the backend's submit host (see its backend page)",
            ) from None
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess(list(argv), 124, "", "timed out")
        if proc.returncode == 0:
            return Call(argv=tuple(argv), stdout=proc.stdout, attempts=attempt)
        last = (proc.stderr or proc.stdout).strip()
        if not TRANSIENT.search(last):
            raise SchedulerRejected(
                message=f"{' '.join(argv[:2])} refused: {last or f'exit {proc.returncode}'}",
                hint="fix the request (partition, account, limits) per the backend page",
            )
        if attempt < attempts:
            sleep(base_delay * 2 ** (attempt - 1))
    raise SchedulerUnavailable(
        message=f"{argv[0]} failed {attempts} times: {last}",
        hint="the scheduler is down or overloaded; nothing was submitted — try again later",
    )
