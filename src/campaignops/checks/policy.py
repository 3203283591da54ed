"""POLICY checks: campaign.yaml, backend pages' front matter, the failure catalog."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "POLICY"
SUMMARY = "campaign.yaml, backend pages' front matter, the failure catalog"
CODES = code_table(
    Code(
        id="POLICY001",
        message="campaign.yaml: {problem}",
        hint="fix the value; the policy format is in docs/formats.md",
    ),
    Code(
        id="POLICY002",
        message="authorized backend {backend!r} has no page {page}",
        hint="copy backends/TEMPLATE.md to {page} and fill it in, or remove {backend!r} from backends",
    ),
    Code(
        id="POLICY003",
        message="backend page front matter: {problem}",
        hint="fix the front matter; the backend page format is in docs/formats.md",
    ),
    Code(
        id="POLICY004",
        message="failure catalog: {problem}",
        hint="fix the entry; the failure catalog format is in docs/formats.md",
    ),
    Code(
        id="POLICY005",
        message="not valid YAML: {problem}",
        hint="fix the syntax",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
