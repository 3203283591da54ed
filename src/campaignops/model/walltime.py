"""One walltime model: a manifest's ``time`` read once into seconds, written in each backend's syntax.

Accepted forms (docs/formats.md, "Walltime"):

- ``HH:MM``      hours:minutes, as the manifest has always meant it (and PBS reads it)
- ``HH:MM:SS``   hours:minutes:seconds; hours may pass 24 (``72:00:00``)
- ``D-HH:MM``    days-hours:minutes, hours 0-23
- ``D-HH:MM:SS`` days-hours:minutes:seconds, hours 0-23
- ``M``          a number of minutes, as Slurm reads a bare number (a string: ``"90"``)

Minutes and seconds are two digits, 00-59. Slurm reads a two-field ``MM:SS`` where this model
(and PBS) reads ``HH:MM``, so the renderers never write a two-field value: every backend gets
three fields, which Slurm, PBS and the local backend all read as hours:minutes:seconds.

An integer (YAML ``time: 90``) is refused rather than read as minutes: YAML 1.1 reads an unquoted
``12:00:00`` as the base-60 integer 43200, indistinguishable from a meant 43200 minutes.
"""

from __future__ import annotations

import re

from campaignops.core.errors import UsageError

# A year: beyond every site's MaxTime, and far below the 2**31 seconds past which Slurm's
# time_str2secs overflows its int and would store some other limit without a word.
MAX_SECONDS = 365 * 86400
FORMS = 'HH:MM, HH:MM:SS, D-HH:MM, D-HH:MM:SS or a quoted number of minutes ("90")'
_HINT = f'use {FORMS}, e.g. "00:30" (30 minutes) or "1-12:00:00"'
_FORM = re.compile(
    r"(?:(?:(?P<days>[0-9]+)-(?P<day_hours>[0-9]{1,2}))|(?P<hours>[0-9]+))"
    r":(?P<minutes>[0-9]{2})(?::(?P<seconds>[0-9]{2}))?"
    r"|(?P<plain>[0-9]+)"
)


class WalltimeError(UsageError):
    """A time limit that is not one of the accepted forms, or out of range."""


def parse(text: object, *, where: str = "resources.time") -> int:
    """The time limit ``text`` in seconds (positive, at most MAX_SECONDS); WalltimeError if not."""
    if not isinstance(text, str):
        raise WalltimeError(
            message=f"{where} {text!r} is not a string",
            hint=f"quote it: unquoted YAML reads 12:00:00 as the number 43200; {_HINT}",
        )
    match = _FORM.fullmatch(text)
    if match is None:
        raise WalltimeError(message=f"{where} {text!r} is not a time limit", hint=_HINT)
    if match["plain"] is not None:
        total = _number(match["plain"]) * 60
    else:
        days, hours = _number(match["days"] or "0"), _number(match["day_hours"] or match["hours"])
        minutes, seconds = _number(match["minutes"]), _number(match["seconds"] or "0")
        wrong = [
            f"{name} {value:02d} is over {top}"
            for name, value, top in (
                ("hours", hours if match["days"] else 0, 23),
                ("minutes", minutes, 59),
                ("seconds", seconds, 59),
            )
            if value > top
        ]
        if wrong:
            raise WalltimeError(message=f"{where} {text!r}: " + "; ".join(wrong), hint=_HINT)
        total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total == 0:
        raise WalltimeError(
            message=f"{where} {text!r} is zero",
            hint="leave time out to get the partition's or queue's default limit",
        )
    if total > MAX_SECONDS:
        raise WalltimeError(
            message=f"{where} {text!r} is over {MAX_SECONDS // 86400} days",
            hint="no backend grants a longer job; check the value (days come before the dash)",
        )
    return total


def _number(digits: str) -> int:
    # Past 12 significant digits any field is over the limit; int() of a long digit string is
    # slow, and refused past 4300 digits.
    significant = digits.lstrip("0") or "0"
    return int(significant) if len(significant) <= 12 else MAX_SECONDS + 1


def _check(seconds: int) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        raise WalltimeError(
            message=f"time limit {seconds!r} s is not a whole number of seconds", hint=_HINT
        )
    return seconds


def hms(seconds: int) -> str:
    """``HH:MM:SS``, hours past 24 kept (``36:00:00``): PBS's ``walltime`` form."""
    total = _check(seconds)
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def dhms(seconds: int) -> str:
    """``HH:MM:SS`` under a day, else ``D-HH:MM:SS``: Slurm's three-field forms."""
    days, rest = divmod(_check(seconds), 86400)
    return f"{days}-{hms(rest)}" if days else hms(rest)
