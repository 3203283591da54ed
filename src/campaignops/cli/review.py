"""`campaign review --base REF`: what the committed change from REF to HEAD does to the campaign."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.files import _date
from campaignops.core import layout, safetext
from campaignops.core.errors import UsageError


def _review(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.cli.jobs import campaign_root
    from campaignops.gitops.review import render as review_render
    from campaignops.gitops.review import run as review
    from campaignops.gitops.review import tree as review_tree

    root = campaign_root()
    repo = review_tree.repo_of(root)
    head = review_tree.commit(repo, "HEAD")
    tip = review_tree.commit(repo, args.base)
    base = review_tree.merge_base(repo, tip, head)
    if base is None:
        print(
            safetext.plain_line(
                f"campaign review: warning: {args.base} and HEAD share no history in this "
                f"clone (a shallow clone?): comparing with {args.base} itself, so its own "
                "later changes show as reverted; fetch the history (actions/checkout "
                "fetch-depth: 0)"
            ),
            file=err,
        )
        base = tip
    with tempfile.TemporaryDirectory(prefix="campaign-review-") as tmp:
        trees = []
        for side, sha in (("base", base), ("head", head)):
            tree = review_tree.materialise(repo, sha, Path(tmp) / side)
            if not (tree / layout.POLICY_FILE).is_file():
                where = f"{repo.prefix}/{layout.POLICY_FILE}" if repo.prefix else layout.POLICY_FILE
                raise UsageError(
                    message=f"{args.base if side == 'base' else 'HEAD'} ({sha[:12]}) has no "
                    f"{where}: not a campaign at that commit",
                    hint="pass a --base that already holds the campaign (e.g. the branch the "
                    "pull request targets)",
                )
            trees.append(tree)
        result = review.compare(
            base=trees[0],
            head=trees[1],
            today=args.today or dt.date.today(),
            base_name=args.base,
            commits=(base, head),
        )
    if args.format == "json":
        contract.emit(out, args.command_name, json.loads(review_render.to_json(result)))
    else:
        print(review_render.markdown(result), file=out, end="")
    return 1 if result.introduced else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rev = sub.add_parser(
        "review",
        help="what a change does to the campaign: targets, smokes, cost, queues, policy",
        description="Compare HEAD's committed campaign with REF's (from where HEAD's branch "
        "left REF, as a pull request's diff does; the working tree is never read), read "
        "semantically: targets added, removed and changed per manifest (expanded grids and "
        "queue cells), targets whose fingerprint changed and so need a new smoke, the cost of "
        "each manifest's smoke and production before and after, queue lines appended (an edit "
        "that is not an append is a finding), new wrapper versions, campaign.yaml changes, "
        "backend facts and catalog entries added, changed or re-verified, and campaign "
        "check's findings introduced and fixed.",
        epilog="exit codes: 0 a review, 1 the change introduces findings (so CI can fail on "
        "them), 2 REF is not a commit, or either side is not a campaign.",
    )
    rev.add_argument(
        "--base", required=True, metavar="REF", help="the branch or commit to compare with"
    )
    contract.add_format(
        rev,
        "markdown",
        "json",
        default="markdown",
        help="markdown (default: the pull-request comment) or json (docs/formats.md)",
    )
    rev.add_argument(
        "--today",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the date stamps are aged against on both sides (default: today)",
    )
    rev.set_defaults(handler=_review)
