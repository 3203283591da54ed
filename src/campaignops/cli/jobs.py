"""`campaign submit` and `campaign status`: the runner's commands."""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

from campaignops.core import layout, safetext
from campaignops.core.errors import UsageError


def campaign_root() -> Path:
    root = layout.find_root(Path.cwd())
    if root is None:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} here or above",
            hint="run inside a campaign repository (campaign new creates one)",
        )
    return root


def _submit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.runner import submit

    root = campaign_root()
    manifest = layout.root_relative(
        args.manifest, root=root, cwd=Path.cwd(), hint="pass a manifest inside the campaign"
    )
    ask = submit.Ask(
        manifest=manifest,
        stage=args.stage,
        targets=tuple(args.targets),
        backend=args.backend,
        after=args.after,
        dry_run=args.dry_run,
        override=args.override,
        failed=args.failed,
    )
    result = submit.submit(root=root, ask=ask, commit=args.commit)
    if result.note:
        print(result.note, file=out)
        return 0
    for planned in result.planned:
        spec = planned.job.spec
        print(f"== {spec.name} on {result.backend}: {len(spec.tasks)} task(s)", file=out)
        for v in planned.verdicts:
            mark = "pass" if v.passed else "REFUSE"
            print(f"  gate {v.gate:<12} {mark:<6} {v.reason}", file=out)
            if not v.passed:
                print(f"    hint: {v.hint}", file=out)
        if args.dry_run:
            print(f"-- the script that would be submitted:\n{planned.script}", file=out)
    if args.dry_run:
        if result.unreachable:
            print(
                f"note: no_sibling was not checked: this machine cannot reach backend "
                f"{result.backend} ({result.unreachable})",
                file=out,
            )
        refused = sorted({v.gate for p in result.planned for v in p.verdicts if not v.passed})
        if refused:
            # Exit 1 like the real submit would: a dry run is then a preflight a script can use.
            print(
                f"dry run: nothing submitted; a submit would be refused by {', '.join(refused)}",
                file=out,
            )
            return 1
        if result.unreachable:
            print("dry run: nothing submitted; a submit from here would fail (exit 2)", file=out)
            return 2
        print("dry run: nothing submitted; a submit would pass every gate", file=out)
        return 0
    for s in result.submitted:
        if s.job_id is None:
            print(
                f"outcome unknown for {s.name} (ledger {s.ledger_id}): it may be queued; do "
                "not submit it again: campaign status --refresh finds it and records it",
                file=out,
            )
        else:
            print(f"submitted {s.name} as job {s.job_id} (ledger {s.ledger_id})", file=out)
    if result.commit:
        print(f"committed ledger, lock, STATUS.md and scripts: {result.commit[:10]}", file=out)
    for w in result.warnings:
        print(f"warning: {w.message}\n  run: {w.hint}", file=err)
    print(
        "next: campaign status --refresh   (STATUS.md and .campaign/ledger.jsonl record it)",
        file=out,
    )
    # Submitted, but a later step did not happen (or a later job was not submitted): exit 1.
    return 1 if result.warnings else 0


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
    import json as json_mod

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
        notes = [f"retried after OUT_OF_MEMORY (oom_retry): {name}" for name in done.retried]
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
        print(json_mod.dumps({"jobs": jobs, "unlisted": dict(listed.left)}, indent=2), file=out)
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
    boxes, cap = meter.read(root, ledger_mod.placed(sources.ledger()))
    if boxes:
        print("\nSSH instances (since the first job placed on each):", file=out)
        for line in aligned("\n".join(meter.lines(boxes, now))):
            print(f"  {line}", file=out)
        warned = meter.warning(boxes, now, cap)
        if warned:
            print(warned, file=err)
    print(f"STATUS.md: {root / 'STATUS.md'}\nledger: {root / layout.LEDGER_FILE}", file=out)
    return 0


def _cancel(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.runner import cancel

    root = campaign_root()
    plan = cancel.prepare(root=root, job=args.job, targets=args.targets)

    def some(items: tuple[str, ...] | list[str]) -> str:
        return ", ".join(items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")

    # The logs first: what the tasks were doing is worth reading before they are stopped.
    for log in plan.logs:
        if log.tail is not None:
            task = "" if log.index is None else f", task {log.index}"
            head = f"== {log.path} (target {log.target}{task}): last {len(log.tail)} line(s)"
            print(safetext.plain_line(head), file=out)
            # A log is the task's (a box's) text: its escapes must not reach the terminal.
            for line in log.tail:
                print(safetext.plain_line(f"   {line}"), file=out)
    waiting = [log.target for log in plan.logs if log.tail is None]
    if waiting:  # one line, not one per task: an array may hold a thousand not started yet
        print(f"== no log yet: {some(waiting)}", file=out)
    done = cancel.cancel(root=root, plan=plan, by=cancel.actor(), reason=args.reason)
    what = "job" if plan.whole else "task(s)"
    print(
        f"cancelled {what} {some(plan.cancel_ids)} ({plan.name}: {some(plan.targets)}) on "
        f"{plan.backend}; recorded in the ledger ({plan.ledger_id}, by {done.by})",
        file=out,
    )
    print("next: campaign status --refresh   (shows CANCELLED once it has stopped)", file=out)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sbm = sub.add_parser(
        "submit",
        help="submit a manifest's targets from committed files, through the six gates",
        description="Submit a manifest's targets to a backend: only from committed files, "
        "smoke before single/production, no duplicate of a queued or running job, not a "
        "fourth try of the same crash, and within budget. Gates in order: committed, authorized, "
        "smoke_first, no_sibling, breaker, budget. Every submission is recorded in "
        ".campaign/ledger.jsonl.",
        epilog="exit codes: 0 submitted (or a dry run whose gates all pass), 1 a gate refused "
        "(also in a dry run), the scheduler rejected the job, or it was submitted but a later "
        "step (lock, STATUS.md, commit, push) failed or its outcome is unknown (the warning "
        "says what to run), 2 usage error or the scheduler is unreachable from this machine.",
    )
    sbm.add_argument(
        "manifest",
        metavar="MANIFEST",
        help="a manifest under manifests/: jobs, a grid, phases, or a queue file's cells "
        "(queue: queues/x.txt)",
    )
    sbm.add_argument(
        "--stage",
        required=True,
        choices=("smoke", "single", "production"),
        help="smoke (run length cut), single (one target), production (fan-out)",
    )
    sbm.add_argument(
        "--targets", nargs="+", default=[], metavar="ID", help="only these targets (default: all)"
    )
    sbm.add_argument(
        "--backend",
        metavar="NAME",
        help="an authorized backend (default: the manifest's, else smoke_backend "
        "for smoke, else the first authorized)",
    )
    sbm.add_argument("--after", metavar="JOBID", help="start only after JOBID completes (afterok)")
    sbm.add_argument(
        "--failed",
        action="store_true",
        help="only the targets whose latest attempt at this stage ended without success "
        "(one array job); with --targets, only among those",
    )
    sbm.add_argument(
        "--dry-run",
        action="store_true",
        help="print every gate's verdict and the script; submit nothing (exit 1 if a gate "
        "would refuse)",
    )
    sbm.add_argument(
        "--override",
        metavar="REASON",
        help="pass a tripped breaker or an exceeded budget; the reason is recorded in the ledger",
    )
    sbm.add_argument(
        "--commit",
        action="store_true",
        help="commit the ledger, the wrapper lock, STATUS.md and the submitted scripts "
        "(.campaign/jobs/) afterwards",
    )
    sbm.set_defaults(handler=_submit)

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
    sts.add_argument(
        "--stage",
        choices=("smoke", "single", "production"),
        help="list only jobs of this stage",
    )
    sts.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table (default), markdown (STATUS.md's tables), json (the listed jobs' ledger "
        "records, newest first, and the count of the others by state)",
    )
    sts.set_defaults(handler=_status)

    cnc = sub.add_parser(
        "cancel",
        help="cancel a recorded job (or some of its targets) through its backend",
        description="Cancel a job recorded in the ledger: print the last 20 lines of each "
        "selected task's log, cancel through the job's backend (scancel, qdel, the local "
        "executor) and append a cancel record to .campaign/ledger.jsonl. campaign status "
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
    cnc.set_defaults(handler=_cancel)
