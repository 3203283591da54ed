"""`campaign audit`: the scheduled audit, `audit resources` (right-sizing, efficiency) and
`campaign report` (the campaign's summary): the reports that learn from finished jobs."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.files import _date
from campaignops.cli.jobs import aligned
from campaignops.core import safetext
from campaignops.gitops.upkeep import run as upkeep

STAGE_HELP = "only this stage (default: every stage)"


def _add_manifest(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest", metavar="M", help="only this manifest, e.g. manifests/train.yaml"
    )


def _resources(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.cli.jobs import campaign_root, manifest_in
    from campaignops.learn import resources as audit
    from campaignops.learn import rightsizing_render as render

    root = campaign_root()
    manifest = None if args.manifest is None else manifest_in(args.manifest, root)
    report = audit.resources(root=root, stage=args.stage, manifest_path=manifest)
    if args.format == "json":
        contract.emit(out, args.command_name, render.to_json(report))
        return 0
    if args.format == "markdown":
        print(render.markdown(report), file=out)
        return 0
    if not report.stages:
        print("no finished task in the ledger matches: nothing to audit", file=out)
        return 0
    tables = [render.stages_table(report)]
    tables += [render.efficiency_table(report)] if report.efficiency else []
    for table in tables:
        for line in aligned(table):
            print(line, file=out)
        print("", file=out)
    if not report.recommendations:
        print("no change recommended: every request fits what its tasks used", file=out)
        return 0
    for line in aligned(render.recommendations_table(report)):
        print(line, file=out)
    return 0


def _report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.cli.jobs import campaign_root, manifest_in
    from campaignops.learn import summary, summary_files, summary_render

    root = campaign_root()
    manifest = None if args.manifest is None else manifest_in(args.manifest, root)
    found = summary.report(root=root, stage=args.stage, manifest_path=manifest)
    if args.write:
        for rel in summary_files.write(root=root, summary=found):
            print(f"wrote {safetext.plain_line(rel)}", file=err)
    if args.format == "json":
        contract.emit(out, "report", summary_render.to_json(found))
    elif args.format == "markdown":
        print(summary_render.markdown(found, title="Campaign report"), file=out)
    elif not found.groups:
        print("no submitted task in the ledger matches: nothing to report", file=out)
    else:
        print(f"tasks: {summary_render.counts_line(found.groups)}", file=out)
        for table in (summary_render.groups_table(found), summary_render.problems_table(found)):
            if table:
                print("", file=out)
                for line in aligned(table):
                    print(line, file=out)
    return 0


REPORT_DESCRIPTION = """The experiment-queue's summary, from the ledger alone: per manifest (and phase) and stage,
each target's outcome at its latest attempt: completed, OOM-retried then completed, failed
(with the diagnosis status --refresh recorded), stuck (needs a person: the breaker would
refuse it again, its oom_retry attempts are spent, or nothing explains the failure), cancelled,
running; when it was submitted, started and finished, the wall-clock, queue wait, run time
and cost. --write keeps it as reports/<manifest>-<stage>.md with a picture beside it
(reports/<manifest>-<stage>.svg: per task queue wait and run time, failures marked, and the
cost over time) and links it from STATUS.md. Run campaign status --refresh first."""


def _register_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser(
        "report",
        help="the campaign's summary per manifest and stage: completed, OOM-retried, failed, "
        "stuck, times and cost",
        description=REPORT_DESCRIPTION,
        epilog="exit codes: 0 a report (whatever its tasks did), 2 not in a campaign, a "
        "--manifest the campaign and its ledger do not know, or a report that cannot be written.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_manifest(rep)
    contract.add_stage(rep, help=STAGE_HELP)
    contract.add_format(
        rep,
        "text",
        "markdown",
        "json",
        help="text (default, aligned columns), markdown, json (campaignops/report/v1, "
        "docs/json.md)",
    )
    rep.add_argument(
        "--write",
        action="store_true",
        help="also write reports/<manifest>-<stage>.md and .svg, and link them from STATUS.md "
        "(commit them yourself)",
    )
    rep.set_defaults(handler=_report)


def _days(value: str) -> int:
    try:
        days = int(value)
    except ValueError:
        days = -1
    if not 0 <= days <= MAX_DUE_WITHIN:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number of days from 0 to {MAX_DUE_WITHIN}"
        )
    return days


MAX_DUE_WITHIN = 3660  # ten years: a window longer than any stamp's life says nothing more


def _scheduled(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.cli.files import _display
    from campaignops.cli.jobs import campaign_root
    from campaignops.gitops.upkeep import gather as upkeep_gather
    from campaignops.gitops.upkeep import render as upkeep_render

    # The audit takes no files: outside a campaign, say where to run it (the checks' own
    # refusal would suggest passing files).
    campaign_root()
    cwd = Path.cwd()
    if args.today is None:
        today, now = dt.date.today(), dt.datetime.now(dt.timezone.utc)
    else:
        # --today pins the whole audit: jobs are judged as at its first second (UTC).
        today = args.today
        now = dt.datetime.combine(today, dt.time.min, tzinfo=dt.timezone.utc)
    found = upkeep_gather.gather(cwd=cwd, today=today, now=now, due_within_days=args.due_within)
    display = _display(found.root, cwd.resolve())
    result = found.audit
    problems = [{"message": p.message, "hint": p.hint} for p in found.problems]
    if args.format == "json":
        doc = {**upkeep_render.to_json(result, display), "problems": problems}
        contract.emit(out, args.command_name, doc)
    elif args.format == "markdown":
        print(upkeep_render.markdown(result, display), file=out)
    else:
        print(upkeep_render.text(result, display), file=out)
    for problem in found.problems:
        for line in safetext.error_lines("text", problem.message, hint=problem.hint):
            print(line, file=err)
    if found.problems:
        return 2
    return 1 if result.needs_action else 0


AUDIT_DESCRIPTION = """\
Without a subcommand: the scheduled audit. Every verified stamp stale now, and every one
that goes stale within --due-within days, per file with the source to re-check; plus the
standing checks no commit triggers: the wrappers lock, the ledger's health, and jobs the
ledger shows running or unknown past their recorded time limit (no scheduler call).
A scheduled workflow posts --format markdown as one issue (docs/runner.md, Audit).
With `resources`: what the scheduler measured of finished jobs (right-sizing)."""

AUDIT_EPILOG = """exit codes: 0 nothing stale and no standing finding (stamps only due are a reminder),
1 stale stamps or standing findings, 2 not in a campaign, bad input, or unreadable files.
`campaign audit resources` is the right-sizing report (its own --help)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    aud = sub.add_parser(
        "audit",
        help="the scheduled audit: stale and soon-stale stamps, standing checks; "
        "audit resources: right-sizing",
        description=AUDIT_DESCRIPTION,
        epilog=AUDIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    aud.add_argument(
        "--today",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the date stamps are aged against, and jobs judged at (default: today)",
    )
    aud.add_argument(
        "--due-within",
        type=_days,
        default=upkeep.DEFAULT_DUE_WITHIN_DAYS,
        metavar="DAYS",
        help="also list stamps that go stale within this many days "
        f"(default: {upkeep.DEFAULT_DUE_WITHIN_DAYS})",
    )
    contract.add_format(
        aud,
        "text",
        "markdown",
        "json",
        help="text (default), markdown (the issue body, with a hidden marker line), "
        "json (docs/formats.md)",
    )
    aud.set_defaults(handler=_scheduled)
    audits = aud.add_subparsers(dest="audit", metavar="[AUDIT]")
    res = audits.add_parser(
        "resources",
        help="memory and time used against requested, per manifest and stage, with recommendations",
        description="Per manifest (and phase) and stage, from the ledger's finished tasks: "
        "queue wait and run time (median and max), peak MaxRSS against the memory request, "
        "failures by category, and a recommended mem and time where the figures support one; "
        "then CPU efficiency (TotalCPU over run time × AllocCPUS), GPU-hours, tasks per hour, "
        "failure rate and an array %C suggestion where the accounting has the fields "
        "(rules and sources: docs/runner.md, Right-sizing). Run campaign status --refresh first.",
        epilog="exit codes: 0 a report (with or without recommendations), 2 not in a campaign, "
        "or a --manifest the campaign and its ledger do not know.",
    )
    contract.add_stage(res, help=STAGE_HELP)
    _add_manifest(res)
    contract.add_format(
        res,
        "text",
        "markdown",
        "json",
        help="text (default, aligned columns), json (docs/formats.md), markdown (a PR comment)",
    )
    res.set_defaults(handler=_resources)
    _register_report(sub)
