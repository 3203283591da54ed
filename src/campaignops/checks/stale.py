"""STALE checks: verified stamps: age, parseable dates, backend pages without a stamp."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "STALE"
SUMMARY = "verified stamps: age, parseable dates, backend pages without a stamp"
CODES = code_table(
    Code(
        id="STALE001",
        message="stamp {stamp!r} is {age} months old (policy allows {limit})",
        hint="re-verify the fact against its source, then update the stamp to this month",
    ),
    Code(
        id="STALE002",
        message="stamp {stamp!r} has no parseable date",
        hint="write verified YYYY-MM (or verified <source> YYYY-MM, or verified Mon YYYY)",
    ),
    Code(
        id="STALE003",
        message="backend page has no verified stamp",
        hint="add verified: YYYY-MM to the front matter, and stamp each fact with its source",
    ),
    Code(
        id="STALE004",
        message="stamp {stamp!r} is dated in the future (today is {today})",
        hint="stamp the month you actually verified the fact",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
