"""`campaign check`, `campaign checks`, `campaign lock`, `campaign render`: the campaign's files."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from campaignops.checks import context, registry, report
from campaignops.cli import contract
from campaignops.cli.jobs import campaign_root
from campaignops.core import layout, safetext


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _display(root: Path, cwd: Path) -> Callable[[str], str]:
    def display(rel: str) -> str:
        full = root / rel
        try:
            return full.relative_to(cwd).as_posix()
        except ValueError:
            return os.path.relpath(full, cwd)

    return display


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cwd = Path.cwd()
    ctx = context.build(paths=args.paths, cwd=cwd, today=args.today, base=args.base, fix=args.fix)
    result = registry.run(ctx, select=args.select, ignore=args.ignore)
    display = _display(ctx.root, cwd.resolve())
    if args.format == "json":
        contract.emit(out, args.command_name, report.to_json(result, display))
    else:
        text = report.render(result, fmt=args.format, display=display)
        if text:
            print(text, file=out)
    if args.format != "json":
        for problem in result.problems:
            # What follows the path: ": why", or ":line:col: why" for a YAML limit.
            rest = problem.message.removeprefix(problem.path)
            where = display(problem.path)
            if rest.startswith(":") and not rest.startswith(": "):
                place, _, message = rest[1:].partition(": ")
                where = f"{where}:{place}"
            else:
                message = rest.removeprefix(": ")
            for line in safetext.error_lines(args.format, message, path=where, hint=problem.hint):
                print(line, file=err)
    if result.problems:
        return 2
    return 1 if result.findings else 0


def _lock(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.model import lockfile  # command modules load on use: `check` starts faster

    root = layout.find_root(Path.cwd()) or Path.cwd()
    entries = lockfile.lock(root=root, paths=args.paths, cwd=Path.cwd(), today=args.today)
    if args.format == "json":
        locked = [{"path": e.path, "digest": e.digest, "date": e.date.isoformat()} for e in entries]
        contract.emit(out, args.command_name, {"locked": locked})
        return 0
    for entry in entries:
        shown = safetext.one_line(entry.path)
        print(f"locked {shown} {entry.digest} {entry.date.isoformat()}", file=out)
    return 0


def _render(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.views import (
        render as views,  # loaded by the commands that render: check starts faster
    )

    root = campaign_root()
    changed = views.render_all(root=root, write=not args.check)
    if args.format == "json":
        doc = {"check": args.check, "files": list(changed)}
        contract.emit(out, args.command_name, doc)
        return 1 if (args.check and changed) else 0
    for rel in changed:
        print(f"{'out of sync' if args.check else 'rendered'}: {safetext.one_line(rel)}", file=out)
    return 1 if (args.check and changed) else 0


def _list_checks(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.format == "json":
        families = [
            {
                "name": fam.name,
                "summary": fam.summary,
                "checks": [{"id": cid, "message": m} for cid, m in registry.listing(fam)],
            }
            for fam in registry.FAMILIES.values()
        ]
        contract.emit(out, args.command_name, {"families": families})
        return 0
    for fam in registry.FAMILIES.values():
        print(f"{fam.name}: {fam.summary}", file=out)
        for cid, message in registry.listing(fam):
            print(f"  {cid}  {message}", file=out)
    return 0


CHECK_EPILOG = """\
families: {families}
exit codes: 0 clean, 1 findings, 2 usage error or unreadable input.
Without PATHs, files are discovered from campaign.yaml's globs (found here or above).
With PATHs (as pre-commit passes them), each file is classified by its path.
`campaign checks` lists every ID with its message."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chk = sub.add_parser(
        "check",
        help="check campaign files (manifests, stamps, line endings, wrappers, queues, views, policy)",
        description="Check a campaign repository. Prints path:line:col: ID message, and a hint.",
        epilog=CHECK_EPILOG.format(families=", ".join(registry.FAMILIES)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chk.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check")
    chk.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="ID[,ID…]",
        help="only these families (MAN) or IDs (MAN003); repeat or comma-separate",
    )
    chk.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID[,ID…]",
        help="skip these families or IDs; repeat or comma-separate",
    )
    chk.add_argument(
        "--base",
        metavar="REF",
        help="git ref to compare against: append-only rules (lock, queues), and STALE only in "
        "files changed since REF (staged, unstaged or untracked)",
    )
    chk.add_argument(
        "--fix",
        action="store_true",
        help="rewrite what can be fixed safely (line endings, BOMs, .gitattributes)",
    )
    chk.add_argument(
        "--today",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the date stamps are aged against (default: today)",
    )
    contract.add_format(
        chk,
        *sorted(report.FORMATTERS),
        help="text (default), github (workflow annotations), json (for tools)",
    )
    chk.set_defaults(handler=_check)

    lst = sub.add_parser(
        "checks",
        help="list check families and IDs",
        description="List every check family and ID with its message.",
    )
    contract.add_format(lst, "text", "json", help=contract.TEXT_OR_JSON)
    lst.set_defaults(handler=_list_checks)
    lck = sub.add_parser(
        "lock",
        help="record wrappers' sha256 in .campaign/wrappers.lock",
        description="Record each wrapper's sha256 and today's date in .campaign/wrappers.lock "
        "(append-only). A locked wrapper must never change: copy it to the next version.",
    )
    lck.add_argument("paths", nargs="+", metavar="PATH", help="wrapper scripts to lock")
    lck.add_argument("--today", type=_date, metavar="YYYY-MM-DD", help="date to record")
    contract.add_format(lck, "text", "json", help=contract.TEXT_OR_JSON)
    lck.set_defaults(handler=_lock)

    rnd = sub.add_parser(
        "render",
        help="rebuild the generated blocks (views) in the campaign's Markdown files",
        description="Rebuild every <!-- campaign:begin NAME --> block from its source.",
    )
    rnd.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list out-of-sync files and exit 1 if any",
    )
    contract.add_format(rnd, "text", "json", help=contract.TEXT_OR_JSON)
    rnd.set_defaults(handler=_render)
