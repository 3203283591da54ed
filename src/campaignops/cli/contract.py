"""The command line's one dialect and its JSON contract (docs/json.md).

Every command takes ``--format`` with the same names (text, json, and markdown or github where a
command has them); with ``--format json`` it prints exactly one JSON document on stdout, its
result or ``{"schema", "error": {"kind", "message", "hint"}}``, whatever happens. Each document
names its schema, ``campaignops/<command>/v1``, shipped in campaignops/schemas/output/.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn, TextIO

from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.model.ledger import STAGES

# The format names, the same in every command; a command offers the ones that make sense for it.
FORMATS = ("text", "markdown", "github", "json", "hook")  # hook: guard's PreToolUse output
# Commands whose standard output is a protocol, not a document: `campaign mcp` speaks MCP's
# JSON-RPC there. They take no --format; their only document is a usage error's.
SERVERS = frozenset({"mcp"})
# Older names kept working in scripts (docs/decisions.md): status's `table` is now `text`.
ALIASES: Mapping[str, str] = {"table": "text"}
TEXT_OR_JSON = "text (default) or json (one document, docs/json.md)"
# What each command may change: nothing ("reads"), files of this repository ("repository"), or
# something outside it ("outside": a scheduler, a box, a forge, a new directory elsewhere). An
# "outside" command previews with --dry-run; tests/cli/test_dialect.py holds every command here.
EFFECTS: Mapping[str, str] = {
    "check": "repository",  # --fix rewrites line endings
    "checks": "reads",
    "lock": "repository",
    "render": "repository",
    "new": "outside",  # a new directory and repository
    "update": "repository",
    "submit": "outside",
    "status": "repository",  # --refresh appends to the ledger (and may retry an OOM task)
    "cancel": "outside",
    "pull": "repository",  # copies from the boxes, writes only here
    "release": "outside",
    "split": "repository",
    "diagnose": "reads",
    "advise": "reads",
    "report": "repository",
    "guard": "reads",
    "mcp": "reads",  # itself nothing: each tool is its command, with that command's gates  # --write writes reports/ and STATUS.md's link
    "lesson-add": "repository",
    "audit": "reads",
    "audit-resources": "reads",
    "review": "reads",
    "publish-comment": "outside",
    "publish-issue": "outside",
}
# The schema of an error raised before a command is known (an unknown command, a group alone).
NO_COMMAND = "error"
# The error kinds an agent can branch on (docs/json.md).
KINDS = ("usage", "input", "refused", "failed")


def format_name(value: str) -> str:
    """``--format``'s type: the name itself, or the current name of an old one."""
    return ALIASES.get(value, value)


def add_format(
    parser: argparse.ArgumentParser,
    *choices: str,
    default: str = "text",
    help: str,
) -> None:
    """The ``--format`` option: ``choices`` from FORMATS, json always among them."""
    parser.add_argument(
        "--format",
        type=format_name,
        choices=choices,
        default=default,
        help=help,
    )


def add_stage(parser: argparse.ArgumentParser, *, help: str, required: bool = False) -> None:
    """The ``--stage`` option: one of the ledger's stages (model/ledger_job.py STAGES)."""
    parser.add_argument("--stage", required=required, choices=STAGES, help=help)


def add_dry_run(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--dry-run", action="store_true", help=help)


def schema_id(command: str) -> str:
    return f"campaignops/{command}/v1"


def command_name(prog: str) -> str:
    """``campaign lesson add`` → ``lesson-add``: a command's name in schemas and documents."""
    return "-".join(prog.split()[1:]) or NO_COMMAND


def _subcommands(parser: argparse.ArgumentParser) -> Mapping[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def leaves(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command that runs something: (name, its parser), depth first. A parser with its own
    handler is one (``audit``), and so is each of its subcommands (``audit resources``)."""
    if parser.get_default("handler") is not None:
        yield command_name(parser.prog), parser
    seen: set[int] = set()
    for child in _subcommands(parser).values():
        if id(child) not in seen:  # aliases map several names to one parser
            seen.add(id(child))
            yield from leaves(child)


def command_of(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """The deepest command ``argv`` names (options skipped), or NO_COMMAND."""
    name, current = NO_COMMAND, parser
    for token in argv:
        child = _subcommands(current).get(token)
        if child is not None:
            current = child
            if child.get_default("handler") is not None:
                name = command_name(child.prog)
    return name


def json_requested(argv: Sequence[str]) -> bool:
    pairs = zip(argv, [*argv[1:], ""], strict=True)
    return any(a == "--format=json" or (a == "--format" and b == "json") for a, b in pairs)


class ArgvError(Exception):
    """An argparse usage error, raised instead of printed so that ``main`` can answer it in
    the run's format."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class Parser(argparse.ArgumentParser):
    """argparse's parser, with its usage errors raised (ArgvError) rather than printed."""

    def error(self, message: str) -> NoReturn:
        raise ArgvError(self, message)


def kind_of(exc: CampaignError) -> str:
    if isinstance(exc, UsageError):
        return "usage"
    if isinstance(exc, InputError):
        return "input"
    return "refused" if exc.exit_code == 1 else "failed"


def error_document(
    command: str, *, kind: str, message: str, hint: str, details: Mapping[str, object] | None = None
) -> dict[str, Any]:
    error = {"kind": kind, "message": message, "hint": hint, **(details or {})}
    return {"schema": schema_id(command), "error": error}


def emit(out: TextIO, command: str, doc: Mapping[str, Any]) -> None:
    """Print one document: ``schema`` first, then the command's own fields."""
    print(dump({"schema": schema_id(command), **doc}), file=out)


def dump(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str)


def fail(out: TextIO, command: str, exc: CampaignError) -> int:
    doc = error_document(
        command, kind=kind_of(exc), message=exc.message, hint=exc.hint, details=exc.details()
    )
    print(dump(doc), file=out)
    return exc.exit_code
