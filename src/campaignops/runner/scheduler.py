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

# Words of an error worth retrying on any scheduler; each backend module adds its own
# (``TRANSIENT``: Slurm's "unable to contact slurm controller", PBS's "pbs_connect" …).
GENERIC_TRANSIENT = r"socket timed out|temporarily unavailable|connection refused|try again"


def transient(*extra: str) -> re.Pattern[str]:
    """The pattern of retryable errors: the generic words and a backend's own."""
    return re.compile("|".join((GENERIC_TRANSIENT, *extra)), re.IGNORECASE)


TRANSIENT = transient()
ATTEMPTS = 4
BASE_DELAY_S = 1.0
TIMEOUT_S = 120.0


class SchedulerUnavailable(CampaignError):
    """The scheduler did not answer after every retry."""

    exit_code = 2


class SchedulerRejected(CampaignError):
    """The scheduler answered and refused (bad partition, account, limits)."""

    exit_code = 1


class OutcomeUnknown(CampaignError):
    """A submission call timed out: the scheduler may have queued the job, or not. Never
    retried (a retry could queue it twice); ``campaign status --refresh`` finds out."""

    exit_code = 1


# What `env CMD` (and a shell) exits with when CMD is not installed.
COMMAND_NOT_FOUND = 127


@dataclass(frozen=True)
class Call:
    argv: tuple[str, ...]
    stdout: str
    attempts: int


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]
# What the runner's orchestration calls a scheduler with (``call``, or a test's stand-in).
Runs = Callable[[Sequence[str]], Call]


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    # A scheduler may print bytes that are not UTF-8 (a job name in Latin-1, a torn line):
    # each reads as U+FFFD, and the parsers treat what they cannot read as unknown.
    return subprocess.run(
        list(argv), capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S
    )


def _unpassable(argv: Sequence[str]) -> str | None:
    """The first argument no command line can carry (a NUL, an unpaired surrogate), or None."""
    for word in argv:
        if "\x00" in word:
            return word
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            return word
    return None


def call(
    argv: Sequence[str],
    *,
    attempts: int = ATTEMPTS,
    base_delay: float = BASE_DELAY_S,
    run: Runner = _run,
    sleep: Callable[[float], None] = time.sleep,
    submission: bool = False,
    retryable: re.Pattern[str] = TRANSIENT,
    answered: frozenset[int] = frozenset(),
) -> Call:
    """Run ``argv``; retry transient failures (delays base, 2×base, 4×base …); raise otherwise.
    An exit status in ``answered`` with something on stdout is an answer (a partial one).

    A query that times out is retried like a transient error. A ``submission`` that times out
    is not: it raises OutcomeUnknown at once, since the job may be queued already.
    """
    bad = _unpassable(argv)
    if bad is not None:
        # From a hand-edited ledger (a job id) or manifest: exec would raise, not run it.
        raise CampaignError(
            message=f"{_program(argv)}: cannot pass {bad!r} as a command argument (it holds a "
            "NUL or an unpaired surrogate)",
            hint="correct the record or file it came from (git log -p shows who wrote it)",
        )
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            proc = run(argv)
        except FileNotFoundError:
            proc = subprocess.CompletedProcess(list(argv), COMMAND_NOT_FOUND, "", "not found")
        except subprocess.TimeoutExpired:
            if submission:
                raise OutcomeUnknown(
                    message=f"{argv[0]} did not answer within {TIMEOUT_S:g} s: the job may or "
                    "may not be queued",
                    hint="campaign status --refresh finds it (by name and comment) or rules it "
                    "out; until then no_sibling counts it as queued",
                ) from None
            proc = subprocess.CompletedProcess(list(argv), 124, "", "timed out")
        if proc.returncode == 0 or (proc.returncode in answered and proc.stdout.strip()):
            return Call(argv=tuple(argv), stdout=proc.stdout, attempts=attempt)
        if proc.returncode == COMMAND_NOT_FOUND:
            program = _program(argv)
            raise SchedulerUnavailable(
                message=f"{program}: command not found on this machine",
                hint="run this on the backend's submit host (its backend page says which), or "
                "submit to a backend this machine reaches (--backend local)",
            )
        last = (proc.stderr or proc.stdout).strip()
        if proc.returncode == 124 and not submission:
            last = last or "timed out"
            last = f"timed out: {last}" if "timed out" not in last else last
        if not retryable.search(last) and proc.returncode != 124:
            raise SchedulerRejected(
                message=f"{' '.join(argv[:2])} refused: {last or f'exit {proc.returncode}'}",
                hint="fix the request per the backend page: partition, account and limits on "
                "a scheduler; the instances' host, port, key and workdir on SSH boxes",
            )
        if attempt < attempts:
            sleep(base_delay * 2 ** (attempt - 1))
    raise SchedulerUnavailable(
        message=f"{_program(argv)} failed {attempts} times: {last}",
        hint="the scheduler is down or overloaded; nothing was submitted — try again later",
    )


def _program(argv: Sequence[str]) -> str:
    """The scheduler command in ``argv``, past an ``env VAR=value`` prefix."""
    words = list(argv)
    if words and words[0] == "env":
        words = [w for w in words[1:] if "=" not in w]
    return words[0] if words else "?"
