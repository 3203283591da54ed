"""`campaign lesson add`: the lessons log (LESSONS.md), one dated line per lesson."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.files import _date
from campaignops.cli.jobs import campaign_root


def _add(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.learn import lesson_add as lessonlog

    root = campaign_root()
    added = lessonlog.add(
        root=root,
        failed=args.failed,
        fixed=args.fixed,
        day=args.today or dt.date.today(),
        job=args.job,
        entry=args.entry,
    )
    shown = os.path.relpath(added.path, Path.cwd())
    if args.format == "json":
        doc = {
            "path": shown,
            "line": added.line,
            "text": added.text,
            "created_file": added.created_file,
            "created_section": added.created_section,
        }
        contract.emit(out, args.command_name, doc)
        return 0
    if added.created_file:
        print(f"created {shown}", file=out)
    elif added.created_section:
        print(f"added the '## Lessons' section to {shown}", file=out)
    print(f"appended to {shown}:{added.line}:\n{added.text}", file=out)
    print(f"next: commit it with the fix (git add {shown})", file=out)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    grp = sub.add_parser(
        "lesson",
        help="the lessons log: append a dated line to LESSONS.md",
        description="LESSONS.md holds one line per lesson learned, newest last: "
        "'- YYYY-MM-DD · what failed · what fixed it · <failures.yaml id or new>'. "
        "campaign check (LESSON) keeps it in that format.",
    )
    cmds = grp.add_subparsers(dest="lesson_command", required=True, metavar="COMMAND")
    add = cmds.add_parser(
        "add",
        help="append one lesson to LESSONS.md",
        description="Append one dated line to the campaign's LESSONS.md, under '## Lessons' "
        "(made if missing): the date, what failed, what fixed it, and the failures.yaml entry "
        "id, or new. With --job, the job id is added to what failed and the entry is the one "
        "campaign status --refresh diagnosed for the job (new when none). Each field must be "
        "one line without ' · '; runs of spaces become one. Existing lines are never changed; "
        "a LESSONS.md with mixed line endings is refused (a CRLF file stays CRLF).",
        epilog="exit codes: 0 appended, 2 a field that is not one line, an unknown job or "
        "entry, an unreadable LESSONS.md or failures.yaml, or not inside a campaign.",
    )
    add.add_argument("failed", metavar="WHAT_FAILED", help="the symptom, with the target")
    add.add_argument("fixed", metavar="WHAT_FIXED_IT", help="the change, with its commit")
    add.add_argument(
        "--job",
        metavar="ID",
        help="the job (a job id, JOB_INDEX for one array task, or a ledger id): named in "
        "what failed; its diagnosis gives the entry",
    )
    add.add_argument(
        "--entry",
        metavar="ID",
        help="the failures.yaml entry id, or new (default: the job's diagnosis, else new)",
    )
    add.add_argument(
        "--today",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the day of the fix (default: today)",
    )
    contract.add_format(add, "text", "json", help=contract.TEXT_OR_JSON)
    add.set_defaults(handler=_add)
