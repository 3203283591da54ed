"""QUEUE checks: queue files: line format, config paths, unique cells, append-only."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "QUEUE"
SUMMARY = "queue files: line format, config paths, unique cells, append-only"
CODES = code_table(
    Code(
        id="QUEUE001",
        message="malformed queue line: {problem}",
        hint="write '<cfg_path> <task> [epochs]', fields separated by spaces; '#' starts a comment",
    ),
    Code(
        id="QUEUE002",
        message="config {cfg!r} does not exist",
        hint="commit the config, or fix the path (relative to the campaign root)",
    ),
    Code(
        id="QUEUE003",
        message="cell name {name!r} is already used at {first}",
        hint="two cells must never share a name (it keys their output directory); rename one config",
    ),
    Code(
        id="QUEUE004",
        message="queue file {change} since {base}; a queue file in flight is append-only",
        hint="restore it (git checkout {base} -- {path}); add cells by appending lines, drop a cell by commenting its line out in place",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
