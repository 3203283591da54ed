"""`campaign status` and `campaign cancel`: the runner's commands after a submit."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from campaignops.cli import contract
from campaignops.core import layout, safetext
from campaignops.core.errors import UsageError

if TYPE_CHECKING:
    from campaignops.runner.cancel import Plan, TaskLog


def campaign_root() -> Path:
    root = layout.find_root(Path.cwd())
    if root is None:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} here or above",
            hint="run inside a campaign repository (campaign new creates one)",
        )
    return root


MANIFEST_INSIDE = "pass a manifest inside the campaign"


def manifest_in(raw: str, root: Path) -> str:
    """A --manifest or MANIFEST argument as the campaign names it (relative to ``root``)."""
    return layout.root_relative(raw, root=root, cwd=Path.cwd(), hint=MANIFEST_INSIDE)


def aligned(markdown: str) -> list[str]:
    """A Markdown table as columns padded to their widest cell; other lines as they are."""
    lines = markdown.splitlines()
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        for line in lines
        if line.startswith("|") and not line.startswith("| ---")
    ]
    if not rows or len({len(r) for r in rows}) != 1:
        return [line for line in lines if not line.startswith("| ---")]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return table + [line for line in lines if not line.startswith("|")]


def _status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.cli.live import Live
    from campaignops.core.files import FileReader
    from campaignops.model import ledger as ledger_mod
    from campaignops.runner import elsewhere, progress, status
    from campaignops.views import recent
    from campaignops.views import render as views

    root = campaign_root()
    # On a terminal, --watch keeps one live line per stage (runner/progress.py) and the round's
    # summary under them; elsewhere (a log, a pipe) each round prints its summary line.
    live = Live(err) if args.watch else None
    watched = {j.ledger_id for j in status.still_open(root)} if live and live.on else set()
    began = time.monotonic()

    def report(done: status.Refresh, left: int | None = None) -> None:
        summary = (
            f"refreshed: {done.queries} scheduler call(s), {len(done.changed)} change(s)"
            + (f", {len(done.reconciled)} lost result(s) found" if done.reconciled else "")
            + (f", {len(done.ruled_out)} never queued" if done.ruled_out else "")
            + (f", {done.retry_waiting} OOM retry(s) waiting" if done.retry_waiting else "")
            + ("" if left is None else f", {left} job(s) unfinished")
        )
        notes = [
            f"retried (oom_retry: out of memory or preempted): {name}" for name in done.retried
        ]
        notes += [
            f"OUT_OF_MEMORY retry refused, tried again next refresh: {why}"
            for why in done.retry_refused
        ]
        # A box's words: one line, no escapes.
        notes += [
            safetext.plain_line(f"warning: {why}") for why in (*done.unvouched, *done.unanswered)
        ]
        if live is not None and live.on:
            for line in notes:
                live.note(line)
            stages = progress.of(ledger_mod.read(root).jobs, watched)
            live.show([*progress.lines(stages, time.monotonic() - began), summary])
            return
        print(summary, file=err, flush=True)
        for line in notes:
            print(line, file=err)

    if args.interval is not None and not args.watch:
        raise UsageError(
            message="--interval applies to --watch only",
            hint="campaign status --watch --interval SECONDS (60 to 86400)",
        )
    if args.watch:
        try:
            interval = status.WATCH_MIN_S if args.interval is None else args.interval
            status.watch(root=root, report=report, interval=interval)
        except KeyboardInterrupt:
            print("stopped watching; the jobs go on (campaign status --refresh)", file=err)
            return 130
    elif args.refresh:
        report(status.refresh(root=root))
    sources = views.Sources(FileReader(root))
    selection = recent.Selection(
        recent=sources.recent_jobs(),
        every=args.all,
        since=None if args.since is None else recent.since(args.since),
        stage=args.stage,
    )
    if args.format == "json":
        listed = recent.select(sources.ledger(), selection)
        jobs = [dict(j.record) for j in listed.jobs]
        contract.emit(out, args.command_name, {"jobs": jobs, "unlisted": dict(listed.left)})
        return 0
    if args.format == "markdown":
        jobs_block = views.render_jobs(sources, selection=selection)
        print(sources.render("stages") + "\n\n" + views.escape_surrogates(jobs_block), file=out)
        return 0
    away = elsewhere.of(root, ledger_mod.live(sources.ledger()))
    shown = {j.ledger_id: elsewhere.ELSEWHERE for j in away}
    here = views.escape_surrogates(views.render_jobs(sources, shown, selection))
    for line in aligned(here):
        print(safetext.plain_line(line), file=out)  # reasons quote schedulers' and boxes' text
    if away:
        print(
            f"{len(away)} job(s) {elsewhere.ELSEWHERE}: submitted from another clone to its "
            f"machine's local backend; their state is there ({elsewhere.THERE})",
            file=err,
        )
    from campaignops.backends import spending

    spent = spending.read_summary(root, datetime.now(timezone.utc), jobs=sources.ledger().jobs)
    if spent:
        print("\nspent against budget:", file=out)
        for line in aligned(spent):
            print(f"  {line}", file=out)
    from campaignops.backends.ssh import meter

    now = datetime.now(timezone.utc)
    boxes, policy = meter.read(root, ledger_mod.placed(sources.ledger()))
    if boxes:
        print("\nSSH instances (since the first job placed on each):", file=out)
        for line in aligned("\n".join(meter.lines(boxes, now))):
            print(f"  {line}", file=out)
        warned = meter.warning(boxes, now, policy.cloud_usd)
        for line in [warned] if warned else []:
            print(line, file=err)
        for line in meter.idle(boxes, now, policy.idle_warn_minutes):
            print(line, file=err)
        for line in meter.stops(boxes, now, policy.idle_stop_minutes):
            print(line, file=out)
    print(f"STATUS.md: {root / 'STATUS.md'}\nledger: {root / layout.LEDGER_FILE}", file=out)
    return 0


def _cancel(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.runner import cancel

    root = campaign_root()
    plan = cancel.prepare(root=root, job=args.job, targets=args.targets)
    if args.format == "json":
        done = None
        if not args.dry_run:
            done = cancel.cancel(root=root, plan=plan, by=cancel.actor(), reason=args.reason)
        doc = cancel_doc(plan, by=done.by if done else None, dry_run=args.dry_run)
        if done is not None:
            doc["logs"] = _log_docs(done.logs)
        contract.emit(out, args.command_name, doc)
        return 0

    def some(items: tuple[str, ...] | list[str]) -> str:
        return ", ".join(items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")

    # The logs first: what the tasks were doing is worth reading before they are stopped.
    _print_tails(plan.logs, out)
    what = "job" if plan.whole else "task(s)"
    if args.dry_run:
        _print_waiting(plan.logs, out, some)
        print(
            f"dry run: nothing cancelled; would cancel {what} {some(plan.cancel_ids)} "
            f"({plan.name}: {some(plan.targets)}) on {plan.backend}",
            file=out,
        )
        return 0
    done = cancel.cancel(root=root, plan=plan, by=cancel.actor(), reason=args.reason)
    # A box task's log is on its box: its tail comes with the cancel call itself.
    _print_tails([n for o, n in zip(plan.logs, done.logs, strict=True) if o.tail is None], out)
    _print_waiting(done.logs, out, some)
    print(
        f"cancelled {what} {some(plan.cancel_ids)} ({plan.name}: {some(plan.targets)}) on "
        f"{plan.backend}; recorded in the ledger ({plan.ledger_id}, by {done.by})",
        file=out,
    )
    print("next: campaign status --refresh   (shows CANCELLED once it has stopped)", file=out)
    return 0


def _print_tails(logs: Sequence[TaskLog], out: TextIO) -> None:
    for log in logs:
        if log.tail is not None:
            task = "" if log.index is None else f", task {log.index}"
            head = f"== {log.path} (target {log.target}{task}): last {len(log.tail)} line(s)"
            print(safetext.plain_line(head), file=out)
            # A log is the task's (a box's) text: its escapes must not reach the terminal.
            for line in log.tail:
                print(safetext.plain_line(f"   {line}"), file=out)


def _print_waiting(logs: Sequence[TaskLog], out: TextIO, some: Callable[[list[str]], str]) -> None:
    waiting = [log.target for log in logs if log.tail is None]
    if waiting:  # one line, not one per task: an array may hold a thousand not started yet
        print(f"== no log yet: {some(waiting)}", file=out)


def _log_docs(logs: Sequence[TaskLog]) -> list[dict[str, Any]]:
    return [{"target": g.target, "index": g.index, "path": g.path, "tail": g.tail} for g in logs]


def cancel_doc(plan: Plan, *, by: str | None, dry_run: bool) -> dict[str, Any]:
    return {
        "dry_run": dry_run,
        "cancelled": not dry_run,
        "ledger_id": plan.ledger_id,
        "job_id": plan.job_id,
        "name": plan.name,
        "backend": plan.backend,
        "whole": plan.whole,
        "cancel_ids": plan.cancel_ids,
        "targets": plan.targets,
        "by": by,
        "logs": _log_docs(plan.logs),
    }


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sts = sub.add_parser(
        "status",
        help="show the campaign's jobs; --refresh asks each backend once",
        description="Show the jobs recorded in the ledger, newest first: the unfinished ones "
        "and the most recent finished ones (--all, --since and --stage list others). "
        "With --refresh, one batched query per "
        "backend updates every unfinished job (state changes go to the ledger) and STATUS.md is "
        "re-rendered. --watch repeats that at most once a minute until every job has finished "
        "(every 2 s while only local jobs, whose state is files here, are unfinished); there is "
        "no faster loop of a scheduler.",
    )
    sts.add_argument(
        "--refresh",
        action="store_true",
        help="query the backends (one batched call set each) before showing",
    )
    sts.add_argument(
        "--watch",
        action="store_true",
        help="refresh, wait, refresh again … until every job has finished (Ctrl-C stops "
        "watching, not the jobs)",
    )
    sts.add_argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="seconds between --watch rounds: 60 to 86400 (default 60)",
    )
    sts.add_argument(
        "--all",
        action="store_true",
        help="list every job (default: the unfinished ones and the last status.recent_jobs "
        "finished ones, 50 unless campaign.yaml says otherwise; the rest are counted)",
    )
    sts.add_argument(
        "--since",
        metavar="DATE",
        help="list every job submitted at or after DATE (2026-11-21: midnight UTC, or "
        "2026-11-21T10:00:00Z)",
    )
    contract.add_stage(sts, help="list only jobs of this stage")
    contract.add_format(
        sts,
        "text",
        "markdown",
        "json",
        help="text (default; the old name table still works), markdown (STATUS.md's tables), "
        "json (the listed jobs' ledger records, newest first, and the count of the others by "
        "state)",
    )
    sts.set_defaults(handler=_status)

    cnc = sub.add_parser(
        "cancel",
        help="cancel a recorded job (or some of its targets) through its backend",
        description="Cancel a job recorded in the ledger: print the last 20 lines of each "
        "selected task's log, cancel through the job's backend (its scheduler's own cancel "
        "command, or the local executor) and append a cancel record to .campaign/ledger.jsonl. campaign status "
        "--refresh then shows CANCELLED.",
        epilog="exit codes: 0 cancelled, 1 the backend refused, 2 unknown job or target, a job "
        "that already ended, or an unreachable backend.",
    )
    cnc.add_argument(
        "job", metavar="JOB", help="a job id or a ledger id, as campaign status shows them"
    )
    cnc.add_argument(
        "--targets",
        nargs="+",
        default=[],
        metavar="ID",
        help="only the array tasks running these targets (default: the whole job)",
    )
    cnc.add_argument("--reason", metavar="TEXT", help="why; recorded in the ledger")
    contract.add_dry_run(
        cnc, help="show the logs and what would be cancelled; cancel and record nothing"
    )
    contract.add_format(cnc, "text", "json", help=contract.TEXT_OR_JSON)
    cnc.set_defaults(handler=_cancel)
