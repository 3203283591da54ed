"""`campaign diagnose`: what a failed task's log and verdict say, by the failure catalog."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import TextIO

from campaignops.cli import contract
from campaignops.core import layout
from campaignops.core.errors import UsageError
from campaignops.learn.diagnosis import report
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model import catalog, ledger


def _root(required: bool) -> Path | None:
    root = layout.find_root(Path.cwd())
    if root is None and required:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} here or above",
            hint="run inside a campaign repository, or diagnose a file: campaign diagnose --log "
            "FILE --catalog failures.yaml",
        )
    return root


def _today(text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise UsageError(message=f"--today {text!r} is not a date", hint="use YYYY-MM-DD") from None


def _catalog(args: argparse.Namespace, root: Path | None) -> catalog.Catalog:
    if args.catalog is not None:
        path = Path(layout.guard_length(args.catalog))
        return catalog.load_file(path, shown=args.catalog)
    if root is None:
        raise UsageError(
            message="no failure catalog: not inside a campaign",
            hint="run inside a campaign, or pass --catalog failures.yaml",
        )
    return catalog.load(root)


_LOG_ONLY = ("state", "exit_code", "reason", "backend", "kind")


def _diagnose(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    named = [args.job, args.target, args.log]
    if sum(x is not None for x in named) != 1:
        raise UsageError(
            message="name one task (JOB, JOB_INDEX or --target ID) or one log (--log FILE)",
            hint="campaign diagnose 4242_3, campaign diagnose --target lr0.1_s1, or campaign "
            "diagnose --log logs/x-4242_3.out",
        )
    if args.stage is not None and args.target is None:
        raise UsageError(
            message="--stage goes with --target: a job id names its stage already",
            hint="campaign diagnose --target ID --stage smoke",
        )
    recorded = args.log is None
    given = [f"--{k.replace('_', '-')}" for k in _LOG_ONLY if getattr(args, k) is not None]
    if recorded and given:
        raise UsageError(
            message=f"{', '.join(given)} only go with --log: a recorded task's verdict and "
            "backend come from the ledger",
            hint=f"campaign diagnose {args.job or '--target ' + args.target}",
        )
    root = _root(required=recorded)
    cat = _catalog(args, root)
    today = _today(args.today)
    if args.job is not None:
        assert root is not None
        found = report.of_job(root=root, ref=args.job, catalog=cat, today=today)
    elif args.target is not None:
        assert root is not None
        found = report.of_target(
            root=root, target=args.target, stage=args.stage, catalog=cat, today=today
        )
    else:
        evidence = Evidence(state=args.state, exit_code=args.exit_code, reason=args.reason)
        found = report.of_log(
            log=Path(layout.guard_length(args.log)),
            shown=args.log,
            catalog=cat,
            evidence=evidence,
            backend=args.backend,
            kind=args.kind,
            today=today,
        )
    if args.format == "json":
        contract.emit(out, args.command_name, report.as_json(found))
    else:
        out.write(report.as_text(found))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dgn = sub.add_parser(
        "diagnose",
        help="match a failed task's log and verdict against the failure catalog",
        description="Read the tail (200 lines) of a recorded task's log, where its submitted "
        "script sent it, and the scheduler's verdict the last status --refresh recorded; match "
        "them against failures.yaml and print the entry, its cause, fix and retry policy, and "
        "the lesson line to append (campaign lesson add). An error no entry explains is "
        "reported as unknown, never guessed. Matching rules: docs/runner.md, Diagnosis.",
        epilog="exit codes: 0 diagnosed (unknown included), 2 unknown job or task, unreadable "
        "log or catalog.",
    )
    dgn.add_argument(
        "job",
        nargs="?",
        metavar="JOB[_TASK]",
        help="a job id as campaign status shows it (an array task: 4242_3, PBS 4242[3].server) "
        "or a ledger id",
    )
    dgn.add_argument(
        "--target",
        metavar="ID",
        help="instead of JOB: this target's task in the last job that ran it",
    )
    dgn.add_argument(
        "--stage",
        choices=ledger.STAGES,
        help="with --target: the last job of this stage",
    )
    dgn.add_argument("--log", metavar="FILE", help="diagnose this log file instead")
    dgn.add_argument(
        "--state", metavar="STATE", help="with --log: the scheduler's final state, e.g. TIMEOUT"
    )
    dgn.add_argument("--exit-code", type=int, metavar="N", help="with --log: the exit code")
    dgn.add_argument("--reason", metavar="REASON", help="with --log: the scheduler's reason")
    dgn.add_argument(
        "--backend",
        metavar="NAME",
        help="with --log: the backend page it ran on (entries for other backends are skipped)",
    )
    dgn.add_argument("--kind", metavar="KIND", help="with --log: that backend's kind, e.g. slurm")
    dgn.add_argument("--catalog", metavar="FILE", help="a failures.yaml (default: the campaign's)")
    contract.add_format(dgn, "text", "json", help=contract.TEXT_OR_JSON)
    dgn.add_argument("--today", metavar="YYYY-MM-DD", help="the lesson's date (default: today)")
    dgn.set_defaults(handler=_diagnose)
