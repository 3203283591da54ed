"""`campaign update`: the campaign to a newer template (copier update), views re-rendered."""

from __future__ import annotations

import argparse
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.jobs import campaign_root
from campaignops.cli.live import Live
from campaignops.core import safetext


def _update(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.generate import update

    root = campaign_root()
    live = Live(err)  # each step on a terminal, cleared once done; nothing in a log
    step = lambda text: live.show([f"campaign update: {text} …"])  # noqa: E731
    done = update.run(root, to=args.to, dry_run=args.dry_run, step=step)
    live.show([])
    if args.format == "json":
        doc = {
            "dry_run": done.dry_run,
            "old": done.old,
            "new": done.new,
            "source": done.source,
            "changed": [{"code": code, "path": rel} for code, rel in done.changed],
            "rendered": list(done.rendered),
            "render_problem": done.render_problem,
            "conflicts": [{"path": rel, "line": line} for rel, line in done.conflicts],
            "rejects": list(done.rejects),
            "clean": done.clean,
        }
        contract.emit(out, args.command_name, doc)
        return 0 if done.clean else 1
    would = "would update" if done.dry_run else "updated"
    if done.old == done.new and not done.changed:
        print(f"Already at template {done.old} ({done.source}): nothing to update.", file=out)
        return 0
    print(
        f"{would.capitalize()} the template from {done.old} to {done.new} ({done.source})"
        + (": nothing was changed (dry run)." if done.dry_run else "; nothing is committed."),
        file=out,
    )
    if done.changed:
        print(f"Files {'that would change' if done.dry_run else 'changed'}:", file=out)
        for code, rel in done.changed:
            print(f"  {code:>2} {safetext.one_line(rel)}", file=out)
    for rel in done.rendered:
        print(f"re-rendered views in {safetext.one_line(rel)}", file=out)
    if done.render_problem is not None:
        print(f"views not re-rendered: {safetext.one_line(done.render_problem)}", file=out)
    for rel, line in done.conflicts:
        print(
            f"{safetext.one_line(rel)}:{line}: conflict: your change and the template's "
            "touch the same lines",
            file=out,
        )
    for rel in done.rejects:
        print(f"{safetext.one_line(rel)}: rejected hunk", file=out)
    if not done.clean:
        print(
            "Resolve the conflicts (keep the right lines, delete the <<<<<<< ======= >>>>>>> "
            "markers and any .rej file), run campaign render and campaign check, then commit.",
            file=out,
        )
        return 1
    if not done.dry_run:
        print("Next: review `git diff`, run campaign check, then commit.", file=out)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    upd = sub.add_parser(
        "update",
        help="update the campaign to a newer template (copier update), then re-render views",
        description="Run copier update on this campaign: regenerate the template at the "
        "version it was made from (.copier-answers.yml), re-apply your changes over the new "
        "version (a 3-way merge: conflicts become <<<<<<< markers), then re-render the views "
        "(campaign render). Template-owned files (failures.yaml, backend pages, wrappers, "
        "prose, CI) receive upstream corrections; your own (campaign.yaml, failures.local.yaml, "
        "manifests, queues, configs, ledger, lessons, status) are never touched. Refuses a "
        "working tree with uncommitted changes; never commits.",
        epilog="exit status: 0 updated (or nothing to do), 1 conflicts remain (files named), "
        "2 no copier answers (a cookiecutter campaign), uncommitted changes, or copier failed",
    )
    upd.add_argument(
        "--to",
        metavar="VERSION",
        help="the template version (a tag of the template source, e.g. 0.2.0 or v0.2.0; "
        "default: this campaignops' own version for a campaign made by campaign new, else "
        "the source's latest tag)",
    )
    contract.add_dry_run(
        upd,
        help="update a scratch clone instead and report what would change and conflict",
    )
    contract.add_format(upd, "text", "json", help=contract.TEXT_OR_JSON)
    upd.set_defaults(handler=_update)
