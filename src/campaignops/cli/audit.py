"""`campaign audit`: reports that learn from finished jobs (one subcommand per audit)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from campaignops import layout
from campaignops.cli.jobs import aligned


def _resources(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops import rightsizing_render as render
    from campaignops.cli.jobs import campaign_root
    from campaignops.runner import audit

    root = campaign_root()
    manifest = None
    if args.manifest is not None:
        manifest = layout.root_relative(
            args.manifest, root=root, cwd=Path.cwd(), hint="pass a manifest inside the campaign"
        )
    report = audit.resources(root=root, stage=args.stage, manifest_path=manifest)
    if args.format == "json":
        print(json.dumps(render.to_json(report), indent=2, ensure_ascii=False), file=out)
        return 0
    if args.format == "markdown":
        print(render.markdown(report), file=out)
        return 0
    if not report.stages:
        print("no finished task in the ledger matches: nothing to audit", file=out)
        return 0
    for line in aligned(render.stages_table(report)):
        print(line, file=out)
    print("", file=out)
    if not report.recommendations:
        print("no change recommended: every request fits what its tasks used", file=out)
        return 0
    for line in aligned(render.recommendations_table(report)):
        print(line, file=out)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    aud = sub.add_parser(
        "audit",
        help="learn from finished jobs: audit resources (right-sizing)",
        description="Reports from what the scheduler measured of finished jobs (the ledger).",
    )
    audits = aud.add_subparsers(dest="audit", required=True, metavar="AUDIT")
    res = audits.add_parser(
        "resources",
        help="memory and time used against requested, per manifest and stage, with recommendations",
        description="Per manifest (and phase) and stage, from the ledger's finished tasks: "
        "queue wait and run time (median and max), peak MaxRSS against the memory request, "
        "failures by category, and a recommended mem and time where the figures support one "
        "(rules and sources: docs/runner.md, Right-sizing). Run campaign status --refresh first.",
        epilog="exit codes: 0 a report (with or without recommendations), 2 not in a campaign, "
        "or a --manifest the campaign and its ledger do not know.",
    )
    res.add_argument(
        "--stage",
        choices=("smoke", "single", "production"),
        help="only this stage (default: every stage)",
    )
    res.add_argument(
        "--manifest", metavar="M", help="only this manifest, e.g. manifests/train.yaml"
    )
    res.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="text (default, aligned columns), json (docs/formats.md), markdown (a PR comment)",
    )
    res.set_defaults(handler=_resources)
