"""EOL checks: line endings: CR/CRLF in LF-only files, BOMs, .gitattributes rules."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table

FAMILY = "EOL"
SUMMARY = "line endings: CR/CRLF in LF-only files, BOMs, .gitattributes rules"
CODES = code_table(
    Code(
        id="EOL001",
        message="{kind} line ending at line {line} ({count} such lines in the file)",
        hint="convert to LF: campaign check --fix --select EOL {path} (a CRLF script fails with '$'\\r': command not found')",
    ),
    Code(
        id="EOL002",
        message="UTF-8 byte-order mark at the start of the file",
        hint="remove it: campaign check --fix --select EOL {path} (a BOM breaks the shebang line)",
    ),
    Code(
        id="EOL003",
        message=".gitattributes has no eol=lf rule for {pattern}",
        hint="add the line '{pattern} text eol=lf' to .gitattributes (campaign check --fix adds it)",
    ),
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Not implemented yet."""
    return iter(())
