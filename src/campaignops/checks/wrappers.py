"""WRAP checks: wrappers: versioned names, immutability once locked, append-only lock."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "WRAP"
SUMMARY = "wrappers: versioned names, immutability once locked, append-only lock"
CODES = code_table(
    Code(
        id="WRAP001",
        message="wrapper name {name!r} has no version; expected <name>.v<N>.<ext>",
        hint="rename it, e.g. to {suggestion}, and point manifests and queues at the new name",
    ),
    Code(
        id="WRAP002",
        message="locked wrapper changed: locked {locked}, now {current}",
        hint="restore it (git checkout -- {path}); to change it, copy it to {next_version}, edit the copy, and point new queues at it",
    ),
    Code(
        id="WRAP003",
        message="locked wrapper was deleted (locked {locked})",
        hint="restore it (git checkout -- {path}): submitted jobs and the ledger refer to it",
    ),
    Code(
        id="WRAP004",
        message="lock entry {entry!r} was {change} since {base}; the lock is append-only",
        hint="restore the entry (git checkout {base} -- .campaign/wrappers.lock) and only append",
    ),
    Code(
        id="WRAP005",
        message="malformed lock line: {problem}",
        hint="lock lines are '<path> sha256:<64 hex> <YYYY-MM-DD>'; restore the file from git",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
