"""`campaign submit`: a manifest's targets to a backend, through the six gates."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from campaignops.cli import contract
from campaignops.cli.jobs import campaign_root, manifest_in

if TYPE_CHECKING:
    from campaignops.runner.submit import Outcome


def _submit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.runner import submit

    root = campaign_root()
    manifest = manifest_in(args.manifest, root)
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
    if args.format == "json":
        contract.emit(out, args.command_name, submit_doc(result, dry_run=args.dry_run))
        return submit_exit(result, dry_run=args.dry_run)
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


def submit_doc(result: Outcome, *, dry_run: bool) -> dict[str, Any]:
    """``campaign submit --format json``: every job's gate verdicts (and, in a dry run, its
    script), then what was submitted (docs/json.md)."""
    jobs = [
        {
            "name": p.job.spec.name,
            "tasks": len(p.job.spec.tasks),
            "verdicts": [
                {"gate": v.gate, "passed": v.passed, "reason": v.reason, "hint": v.hint}
                for v in p.verdicts
            ],
            "script": p.script if dry_run else None,
        }
        for p in result.planned
    ]
    refused = sorted({v.gate for p in result.planned for v in p.verdicts if not v.passed})
    return {
        "dry_run": dry_run,
        "backend": result.backend,
        "note": result.note,
        "jobs": jobs,
        "refused": refused,
        "unreachable": result.unreachable,
        "submitted": [
            {"name": s.name, "job_id": s.job_id, "ledger_id": s.ledger_id, "targets": s.targets}
            for s in result.submitted
        ],
        "commit": result.commit,
        "warnings": [{"message": w.message, "hint": w.hint} for w in result.warnings],
    }


def submit_exit(result: Outcome, *, dry_run: bool) -> int:
    """The text path's exit codes, for the JSON path (docs/runner.md, submit's exit codes)."""
    if result.note:
        return 0
    if dry_run:
        if any(not v.passed for p in result.planned for v in p.verdicts):
            return 1
        return 2 if result.unreachable else 0
    return 1 if result.warnings else 0


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
    contract.add_stage(
        sbm,
        required=True,
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
    contract.add_dry_run(
        sbm,
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
    contract.add_format(sbm, "text", "json", help=contract.TEXT_OR_JSON)
    sbm.set_defaults(handler=_submit)
