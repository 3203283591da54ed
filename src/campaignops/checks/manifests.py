"""MAN checks: manifests: schema, target ids, placeholders, phases, outputs, backends."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "MAN"
SUMMARY = "manifests: schema, target ids, placeholders, phases, outputs, backends"
CODES = code_table(
    Code(
        id="MAN001",
        message="{problem}",
        hint="fix the value at this line; the format is in docs/formats.md (manifest)",
    ),
    Code(
        id="MAN002",
        message="duplicate target id {target!r} (first defined at line {first_line})",
        hint="give every target a unique id; for grids, put every grid key in template.id",
    ),
    Code(
        id="MAN003",
        message="placeholder ${{{name}}} is not defined by the grid{where}",
        hint="add {name} to the grid, or write the value literally",
    ),
    Code(
        id="MAN004",
        message="phase {phase!r} depends on {missing!r}, which is not a phase of this manifest",
        hint="name an existing phase in depends_on (phases: {known})",
    ),
    Code(
        id="MAN005",
        message="phases depend on each other in a cycle: {cycle}",
        hint="break the cycle; depends_on must form a chain or a tree",
    ),
    Code(
        id="MAN006",
        message="targets {first!r} and {second!r} write the same output {output!r}",
        hint="give each target its own output path (put the target id in it) so parallel cells never share mutable state",
    ),
    Code(
        id="MAN007",
        message="backend {backend!r} is not authorized by campaign.yaml",
        hint="use one of: {authorized}; or add it to backends in campaign.yaml (with a backends/{backend}.md page)",
    ),
    Code(
        id="MAN008",
        message="not valid YAML: {problem}",
        hint='fix the syntax; in flow mappings quote placeholders: {{seed: "${{seed}}"}}',
    ),
    Code(
        id="MAN009",
        message="grid expands to {count:,} targets, more than the {limit:,} this check expands",
        hint="split the grid into several manifests or phases",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
