"""`campaign mcp` and `campaign guard`: the campaign's commands for coding agents."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from campaignops.cli import contract
from campaignops.core.errors import UsageError
from campaignops.gitops import guard

Run = Callable[[Sequence[str] | None, TextIO, TextIO], int]

NO_SDK = "campaign mcp needs the Model Context Protocol SDK, which is not installed"
NO_SDK_HINT = "pip install 'campaignops[mcp]' (the optional extra), then run campaign mcp again"
NO_COMMAND = "no command to judge: no COMMAND argument and the standard input is a terminal"
NO_COMMAND_HINT = "campaign guard 'git push --force', or pipe a PreToolUse hook's JSON to it"
# The scheduler words guard denies come from the registered backends (gitops/guard.py).
RAW_WORDS = ", ".join(sorted(guard.RAW_SUBMIT | guard.RAW_CANCEL))
ALLOCATION_WORDS = ", ".join(sorted(guard.ALLOCATIONS))


def _guard(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command_line is not None:
        command: str | None = args.command_line
    elif sys.stdin.isatty():
        raise UsageError(message=NO_COMMAND, hint=NO_COMMAND_HINT)
    else:
        text = sys.stdin.read()
        try:
            data = json.loads(text)
        except ValueError as exc:
            problem = f"not JSON ({exc})"
            raise UsageError(
                message=guard.NOT_A_HOOK.format(problem=problem), hint=guard.NOT_A_HOOK_HINT
            ) from None
        command = guard.hook_command(data)
    decision = guard.Decision(command="", denied=())
    if command is not None:
        decision = guard.decide(command, env=os.environ)
    if args.format == "hook":
        # Exit 0 either way: the hook's JSON carries a deny (Claude Code reads it on exit 0).
        shown = guard.hook_output(decision)
        if shown is not None:
            print(json.dumps(shown), file=out)
        return 0
    if args.format == "json":
        contract.emit(out, "guard", guard.document(decision))
    elif decision.allowed:
        print(f"allow: {decision.command}", file=out)
    for d in decision.denied if args.format == "text" else ():
        print(f"deny: {d.command}\n  why: {d.reason}\n  instead: {d.instead}", file=out)
    return 0 if decision.allowed else 1


def _mcp_handler(parser: Callable[[], argparse.ArgumentParser], run: Run) -> Callable[..., int]:
    def handler(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        try:
            from campaignops.mcp import server  # the optional extra: imported when asked for
        except ImportError:
            raise UsageError(message=NO_SDK, hint=NO_SDK_HINT) from None
        from campaignops.cli.jobs import campaign_root

        server.serve(root=campaign_root(), parser=parser(), run=run)
        return 0

    return handler


def register(
    sub: argparse._SubParsersAction[contract.Parser],
    *,
    parser: Callable[[], argparse.ArgumentParser],
    run: Run,
) -> None:
    grd = sub.add_parser(
        "guard",
        help="allow or deny an agent's proposed shell command (a PreToolUse hook)",
        description="Read a coding agent's proposed shell command (the COMMAND argument, or a "
        "Claude Code PreToolUse hook's JSON on standard input) and allow or deny it. Denied, "
        f"with the campaign command to use instead: the schedulers' own submit and cancel "
        f"commands ({RAW_WORDS}), {ALLOCATION_WORDS} outside an allocation, provider teardown (vastai destroy, runpodctl remove, Lambda "
        "terminate), a forced git push, and campaign submit --override. Wrappers are read "
        "through: && ; | and $( ), NAME=value prefixes, env/sudo/timeout, bash -c, eval, "
        "ssh HOST ....",
        epilog="exit codes: 0 allowed (and always with --format hook, whose JSON carries a "
        "deny), 1 denied, 2 unreadable input (a hook then blocks the call).",
    )
    grd.add_argument(
        "command_line",
        nargs="?",
        metavar="COMMAND",
        help="the shell command to judge (default: a hook's JSON on standard input)",
    )
    contract.add_format(
        grd,
        "text",
        "json",
        "hook",
        help="text (default), json (the decision and each denial), hook (Claude Code's "
        "PreToolUse output: a deny with its reason, nothing for an allow)",
    )
    grd.set_defaults(handler=_guard)

    mcp = sub.add_parser(
        "mcp",
        help="serve the campaign's commands to an agent over MCP (stdio)",
        description="A Model Context Protocol server on standard input and output whose tools "
        "are the campaign's commands, each answering with the command's JSON document. "
        "Read-only by default (check, status, diagnose, review, audit, split as a plan, submit "
        "as a dry run); submit, cancel, release, lesson add and pull are offered only when "
        "campaign.yaml (as HEAD holds it) lists them under agents: {may: [...]}. They pass the "
        "same six gates and never take --override: a refusal comes back for a person to decide. "
        "Needs pip install 'campaignops[mcp]'.",
    )
    mcp.set_defaults(handler=_mcp_handler(parser, run))
