"""The `campaign` command: parse arguments, call the library with keywords, map errors to exits.

One module per group of commands, each with ``register(sub)``, which adds its parsers and sets
each one's handler; ``main`` dispatches on that handler and maps CampaignError to its exit code.
Exit codes: 0 clean, 1 findings or a refusal, 2 usage error or unreadable input. With
``--format json`` every outcome, usage errors included, is one JSON document on stdout
(cli/contract.py, docs/json.md).
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from campaignops import __version__
from campaignops.cli import (
    advise,
    agents,
    audit,
    boxes,
    contract,
    diagnose,
    files,
    jobs,
    lessons,
    new,
    publish,
    review,
    split,
    submit,
    update,
)
from campaignops.core import safetext
from campaignops.core.errors import CampaignError

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def build_parser() -> argparse.ArgumentParser:
    parser = contract.Parser(
        prog="campaign",
        description="GitOps for compute campaigns: check a campaign repository, create one, "
        "submit its jobs from committed files only, and follow their status.",
    )
    parser.add_argument("--version", action="version", version=f"campaignops {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (
        files,
        new,
        update,
        submit,
        jobs,
        boxes,
        split,
        diagnose,
        advise,
        lessons,
        audit,
        review,
        publish,
    ):
        module.register(sub)
    # campaign mcp runs the other commands as `campaign` does: it is handed the parser and run
    # (campaignops.mcp imports no cli module: cli sits on top).
    agents.register(sub, parser=build_parser, run=run)
    for name, command in contract.leaves(parser):
        command.set_defaults(command_name=name)
    return parser


@functools.cache
def shared_parser() -> argparse.ArgumentParser:
    """The parser every ``run`` in this process uses, built once: a build costs ~10 ms of CPU
    (most of it argparse's gettext look-ups), paid per command by `campaign mcp` and by
    programs that call ``run`` in a loop, and parsing changes nothing in it. The handlers are
    the functions registered at the build: code that replaces one (a test) replaces this
    function by ``build_parser`` meanwhile, so that each command gets a parser of its own."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    # File names are bytes on POSIX; one that is not valid UTF-8 must not crash the report.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return run(argv, sys.stdout, sys.stderr)
    except BrokenPipeError:
        # The reader went away (`campaign check | head`): silence the final flush, report failure.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    """One command as `campaign` runs it, its output on ``out`` and ``err``: what main does,
    and what each `campaign mcp` tool calls (the same parser, handler and error mapping).
    With --format json every outcome, a usage error included, is one document on ``out``."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = shared_parser()
    try:
        args = parser.parse_args(words)
    except contract.ArgvError as exc:
        return _usage_error(parser, exc, words, out, err)
    handler: Handler = args.handler
    try:
        return handler(args, out, err)
    except CampaignError as exc:
        fmt = str(getattr(args, "format", "text"))
        for line in safetext.error_lines(fmt, exc.message, hint=exc.hint):
            print(line, file=err)
        if fmt == "json":
            return contract.fail(out, args.command_name, exc)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def run_json(argv: Sequence[str]) -> tuple[int, dict[str, Any]]:
    """One command in this process with ``--format json`` (added when ``argv`` lacks it): its
    exit code and its document, as a program driving campaign wants them. stderr is left as
    it is: the text lines people read."""
    words = list(argv)
    if not contract.json_requested(words):
        words += ["--format", "json"]
    out = io.StringIO()
    code = run(words, out, sys.stderr)
    doc: dict[str, Any] = json.loads(out.getvalue())
    return code, doc


def _usage_error(
    parser: argparse.ArgumentParser,
    exc: contract.ArgvError,
    words: list[str],
    out: TextIO,
    err: TextIO,
) -> int:
    """argparse's usage and message on ``err``, as ever; with --format json in the words, also
    the error document on ``out`` (and exit 2 rather than argparse's SystemExit)."""
    exc.parser.print_usage(err)
    print(f"{exc.parser.prog}: error: {exc.message}", file=err)
    if not contract.json_requested(words):
        raise SystemExit(2)
    command = contract.command_of(parser, words)
    shown = " ".join(["campaign", *([] if command == contract.NO_COMMAND else command.split("-"))])
    doc = contract.error_document(
        command, kind="usage", message=exc.message, hint=f"see {shown} --help"
    )
    print(contract.dump(doc), file=out)
    return 2
