"""Calling a scheduler command: bounded retries with exponential backoff for transient errors.

A scheduler that stays down is reported (SchedulerUnavailable, exit 2) and nothing is recorded
as submitted. Only errors known to be transient are retried: a rejected job is not.

A submission is retried only on an error known to come before the scheduler accepted anything
(the backend's ``UNSENT``: no connection was made). An error that may follow acceptance (a
timeout, a reset or broken connection, a send or receive failure: ``AMBIGUOUS``, or a transient
error of the backend's that is not known to be unsent), an exit by a signal, or a failure with
no message at all is an unknown outcome (OutcomeUnknown): never retried, since sbatch can print
"Socket timed out" after slurmctld queued the job. Queries are retried on any transient error.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from campaignops.core.errors import CampaignError

# Words of an error worth retrying on any scheduler; each backend module adds its own
# (``TRANSIENT``: Slurm's "unable to contact slurm controller", PBS's "pbs_connect" …).
GENERIC_TRANSIENT = r"socket timed out|temporarily unavailable|connection refused|try again"


def transient(*extra: str) -> re.Pattern[str]:
    """The pattern of retryable errors: the generic words and a backend's own."""
    return re.compile("|".join((GENERIC_TRANSIENT, *extra)), re.IGNORECASE)


TRANSIENT = transient()

# Words of an error after which a submission may have been accepted: the request may have
# reached the scheduler before the answer was lost. They win over UNSENT when both appear.
AMBIGUOUS = re.compile(
    r"timed out|timeout|connection reset|reset by peer|broken pipe|end of file|zero bytes|"
    r"send failure|receive failure|recv|protocol|temporarily unavailable",
    re.IGNORECASE,
)
# Words of an error that comes before anything is sent: the connection itself was refused.
GENERIC_UNSENT = r"connection refused"
NEVER = re.compile(r"(?!)")


def unsent(*extra: str) -> re.Pattern[str]:
    """The pattern of submission errors known to precede acceptance (retried): the generic
    connection refusal and a backend's own (Slurm's "(connect failure)")."""
    return re.compile("|".join((GENERIC_UNSENT, *extra)), re.IGNORECASE)


UNSENT = unsent()
ATTEMPTS = 4
BASE_DELAY_S = 1.0
TIMEOUT_S = 120.0


class SchedulerUnavailable(CampaignError):
    """The scheduler did not answer after every retry."""

    exit_code = 2


class SchedulerRejected(CampaignError):
    """The scheduler answered and refused (bad partition, account, limits)."""

    exit_code = 1


class SchedulerOutputError(CampaignError):
    """A scheduler command printed what its backend cannot read (each backend's own subclass
    names the command): on a submit host, a damaged answer; elsewhere often another
    scheduler's command of the same name."""

    exit_code = 2


class OutcomeUnknown(CampaignError):
    """A submission call timed out or failed in a way that may follow acceptance: the
    scheduler may have queued the job, or not. Never retried (a retry could queue it twice);
    ``campaign status --refresh`` finds out."""

    exit_code = 1


UNKNOWN_HINT = (
    "campaign status --refresh (do not submit it again: the refresh finds the job by name and "
    "comment and records it, or rules it out once the scheduler has had time to show it; until "
    "then no_sibling counts it as queued)"
)


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
    base_delay: float | None = None,
    run: Runner = _run,
    sleep: Callable[[float], None] = time.sleep,
    submission: bool = False,
    retryable: re.Pattern[str] = TRANSIENT,
    answered: frozenset[int] = frozenset(),
    unsent: re.Pattern[str] = UNSENT,
) -> Call:
    """Run ``argv``; retry transient failures (delays base, 2×base, 4×base …); raise otherwise.
    An exit status in ``answered`` with something on stdout is an answer (a partial one).

    A query that times out is retried like a transient error. A ``submission`` is retried only
    on an error ``unsent`` matches (nothing reached the scheduler); one that times out, or
    fails in a way that may follow acceptance, raises OutcomeUnknown at once (_judged).
    """
    bad = _unpassable(argv)
    if bad is not None:
        # From a hand-edited ledger (a job id) or manifest: exec would raise, not run it.
        raise CampaignError(
            message=f"{program(argv)}: cannot pass {bad!r} as a command argument (it holds a "
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
                raise _unknown(argv, f"did not answer within {TIMEOUT_S:g} s") from None
            proc = subprocess.CompletedProcess(list(argv), 124, "", "timed out")
        if proc.returncode == 0 or (proc.returncode in answered and proc.stdout.strip()):
            return Call(argv=tuple(argv), stdout=proc.stdout, attempts=attempt)
        if proc.returncode == COMMAND_NOT_FOUND:
            name = program(argv)
            raise SchedulerUnavailable(
                message=f"{name}: command not found on this machine",
                hint="run this on the backend's submit host (its backend page says which), or "
                "submit to a backend this machine reaches (--backend local)",
            )
        last = (proc.stderr or proc.stdout).strip()
        if submission:
            _judged(argv, proc.returncode, last, unsent=unsent, retryable=retryable)
        elif proc.returncode == 124:
            last = last or "timed out"
            last = f"timed out: {last}" if "timed out" not in last else last
        elif not retryable.search(last):
            raise _refused(argv, proc.returncode, last)
        if attempt < attempts:
            sleep((BASE_DELAY_S if base_delay is None else base_delay) * 2 ** (attempt - 1))
    raise SchedulerUnavailable(
        message=f"{program(argv)} failed {attempts} times: {last}",
        hint="the scheduler is down or overloaded; nothing was submitted — try again later",
    )


def _judged(
    argv: Sequence[str],
    code: int,
    last: str,
    *,
    unsent: re.Pattern[str],
    retryable: re.Pattern[str],
) -> None:
    """A failed submission: return if it is known to have sent nothing (it may be retried);
    raise OutcomeUnknown if the scheduler may have accepted it, SchedulerRejected if it
    refused. Ambiguous words win over unsent ones (sbatch may print a lower layer's error
    first); a transient error not known to be unsent is ambiguous; so is a death by signal,
    an exit 124 (a wrapper's timeout) and a failure that says nothing."""
    if code < 0:
        raise _unknown(argv, f"was killed by signal {-code}")
    if code == 124:
        raise _unknown(argv, "timed out (exit 124)")
    if not last:
        raise _unknown(argv, f"failed (exit {code}) without saying why")
    if AMBIGUOUS.search(last) or (retryable.search(last) and not unsent.search(last)):
        raise _unknown(argv, f"failed with {last[:300]!r}, which may follow acceptance")
    if not unsent.search(last):
        raise _refused(argv, code, last)


def _unknown(argv: Sequence[str], why: str) -> OutcomeUnknown:
    return OutcomeUnknown(
        message=f"{program(argv)} {why}: the outcome is unknown (the job may be queued)",
        hint=UNKNOWN_HINT,
    )


def _refused(argv: Sequence[str], code: int, last: str) -> SchedulerRejected:
    return SchedulerRejected(
        message=f"{' '.join(_command(argv)[:2])} refused: {last or f'exit {code}'}",
        hint="fix the request per the backend page: partition, account and limits on "
        "a scheduler; the instances' host, port, key and workdir on SSH boxes",
    )


def _command(argv: Sequence[str]) -> list[str]:
    """``argv`` past an ``env VAR=value`` prefix."""
    words = list(argv)
    if words and words[0] == "env":
        words = words[1:]
        while words and "=" in words[0]:
            words = words[1:]
    return words


def program(argv: Sequence[str]) -> str:
    """The scheduler command in ``argv``, past an ``env VAR=value`` prefix."""
    words = _command(argv)
    return words[0] if words else "?"
