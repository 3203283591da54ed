"""`campaign pull` and `campaign release`: results home from SSH boxes, then the teardown rule."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.jobs import campaign_root
from campaignops.cli.live import Live
from campaignops.core import safetext
from campaignops.core.errors import UsageError
from campaignops.model import backendpage


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _pull(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.backends.ssh import pull, release

    live = Live(err)  # each call and transfer on a terminal, cleared once done; nothing in a log
    pulled = release.run_pull(
        campaign_root(),
        job=args.job,
        verify=args.verify,
        now=_now(),
        step=lambda text: live.show([f"campaign pull: {text} …"]),
    )
    live.show([])
    cells = pulled.cells
    if args.format == "json":
        doc = {
            "ok": pulled.ok,
            "cells": [
                {
                    "job": c.job_id,
                    "index": c.index,
                    "target": c.target,
                    "instance": c.instance,
                    "verdict": c.verdict,
                    "detail": c.detail,
                    "files": list(c.files),
                    "ignored": list(c.ignored),
                }
                for c in cells
            ],
        }
        contract.emit(out, args.command_name, doc)
    elif not cells:
        print("no ssh job in the ledger: nothing to pull", file=out)
    else:
        for c in cells:
            detail = f": {c.detail}" if c.detail else ""
            line = f"{c.job_id}_{c.index} {c.target} on {c.instance}: {c.verdict}{detail}"
            print(safetext.plain_line(line), file=out)
        counts: dict[str, int] = {}
        for c in cells:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        print(", ".join(f"{n} {v}" for v, n in sorted(counts.items())), file=out)
        bad = [c for c in cells if not c.verified and c.verdict != pull.NOT_FINISHED]
        if bad:
            print(
                "next: fix what failed, then campaign submit MANIFEST --stage S --failed "
                "resubmits exactly the cells not verified",
                file=out,
            )
        elif pulled.ok:
            print(
                "next: campaign release INSTANCE lets go of a box whose cells are all home",
                file=out,
            )
    return 0 if pulled.ok or not cells else 1


def _release(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.backends.ssh import release

    if args.yes and args.dry_run:
        raise UsageError(
            message="--yes runs the release command and --dry-run runs nothing",
            hint="give one of them",
        )
    done = release.release(
        campaign_root(), instance=args.instance, yes=args.yes, now=_now(), dry_run=args.dry_run
    )
    code = 0 if not done.ran or done.exit_code == 0 else 1
    if args.format == "json":
        doc = {
            "dry_run": args.dry_run,
            "instance": done.instance.name,
            "backend": done.backend,
            "cells": done.cells,
            "command": done.command,
            "ran": done.ran,
            "exit_code": done.exit_code,
            "recorded": not args.dry_run,
        }
        contract.emit(out, args.command_name, doc)
        return code
    print(f"instance {done.instance.name}: all {done.cells} cells pulled and verified", file=out)
    recorded = "nothing recorded (dry run)" if args.dry_run else "recorded in the ledger"
    if done.command is None:
        print(
            f"no release command on {backendpage.path_of(done.backend)} for it: stop or destroy it in "
            f"the provider's console now (it bills until you do); {recorded}",
            file=out,
        )
        return 0
    if not done.ran:
        print(f"to stop its meter, run: {done.command}", file=out)
        print(f"(or campaign release --yes runs it for you); {recorded}", file=out)
        return 0
    print(f"ran: {done.command} (exit {done.exit_code}); recorded in the ledger", file=out)
    return code


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pull",
        help="copy finished cells' outputs home from SSH boxes and verify them",
        description="For every ssh job in the ledger (or JOB), ask each box once for its "
        "finished cells' outputs with their size and SHA-256, copy them into this checkout "
        "with rsync (resumable: run it again after a drop), and verify each cell: every "
        "declared output present, non-empty and identical to the box's; with --verify CMD, "
        "also loaded by CMD (exit 0). Each cell's verdict goes into the ledger. Exit 0 when "
        "every finished cell is verified, 1 when one is not, 2 on a failed transfer.",
    )
    p.add_argument("job", nargs="?", metavar="JOB", help="one ssh job id (default: every ssh job)")
    p.add_argument(
        "--verify",
        metavar="CMD",
        help="run CMD per cell in the checkout; {out} is the cell's first output, else its "
        "outputs are appended (e.g. --verify 'python -c \"import json,sys; "
        "json.load(open(sys.argv[1]))\"')",
    )
    contract.add_format(p, "text", "json", help=contract.TEXT_OR_JSON)
    p.set_defaults(handler=_pull)
    r = sub.add_parser(
        "release",
        help="let go of an SSH box once every cell on it is pulled and verified",
        description="The teardown rule: refuse (exit 1) while any cell that ran on INSTANCE "
        "is not pulled and verified (campaign pull), then print the instance's release "
        "command from the backend page (instances[].release, e.g. 'vastai destroy instance "
        "123'), and run it only with --yes. Recorded in the ledger. Nothing is ever "
        "destroyed automatically. --dry-run checks the rule and prints the command, and "
        "records nothing (without --yes the command is printed, not run, and the release is "
        "recorded, as before).",
    )
    r.add_argument("instance", metavar="INSTANCE", help="the instance's name on the backend page")
    r.add_argument("--yes", action="store_true", help="run the configured release command")
    contract.add_dry_run(
        r, help="check the teardown rule and print the command; run and record nothing"
    )
    contract.add_format(r, "text", "json", help=contract.TEXT_OR_JSON)
    r.set_defaults(handler=_release)
