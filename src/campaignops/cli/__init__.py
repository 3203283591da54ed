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
    advise,
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
        advise,
        lessons,
        audit,
        review,
        publish,
    ):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # File names are bytes on POSIX; one that is not valid UTF-8 must not crash the report.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args, sys.stdout, sys.stderr)
    except CampaignError as exc:
        fmt = str(getattr(args, "format", "text"))
        for line in safetext.error_lines(fmt, exc.message, hint=exc.hint):
            print(line, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`campaign check | head`): silence the final flush, report failure.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
