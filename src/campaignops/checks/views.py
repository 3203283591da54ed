"""VIEW checks: generated Markdown blocks in sync with their sources."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "VIEW"
SUMMARY = "generated Markdown blocks in sync with their sources"
CODES = code_table(
    Code(
        id="VIEW001",
        message="view {name!r} is out of sync with {source}",
        hint="run campaign render",
    ),
    Code(
        id="VIEW002",
        message="{problem}",
        hint="view blocks are '<!-- campaign:begin NAME -->' ... '<!-- campaign:end NAME -->' with a known NAME",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
