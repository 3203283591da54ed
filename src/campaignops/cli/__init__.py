"""The `campaign` command: parse arguments, call the library with keywords, map errors to exits.

One module per group of commands, each with ``register(sub)``, which adds its parsers and sets
each one's handler; ``main`` dispatches on that handler and maps CampaignError to its exit code.
Exit codes: 0 clean, 1 findings or a refusal, 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from campaignops import __version__
from campaignops.cli import (
    agents,
    audit,
    boxes,
    diagnose,
    files,
    jobs,
    lessons,
    new,
    publish,
    review,
    split,
    update,
)
from campaignops.core import safetext
from campaignops.core.errors import CampaignError

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        jobs,
        boxes,
        split,
        diagnose,
        lessons,
        audit,
        review,
        publish,
    ):
        module.register(sub)
    # campaign mcp runs the other commands as `campaign` does: it is handed the parser and run
    # (campaignops.mcp imports no cli module: cli sits on top).
    agents.register(sub, parser=build_parser, run=run)
    return parser


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
    A usage error is argparse's: its message on sys.stderr, then SystemExit(2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args, out, err)
    except CampaignError as exc:
        fmt = str(getattr(args, "format", "text"))
        for line in safetext.error_lines(fmt, exc.message, hint=exc.hint):
            print(line, file=err)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
