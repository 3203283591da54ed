"""`campaign advise`: which backend, partition and stage for a job, from the campaign's pages."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

from campaignops.backends import advice
from campaignops.cli import contract
from campaignops.cli.jobs import campaign_root


def text(found: advice.Advice) -> list[str]:
    """The advice as a person reads it: the question, the answer, the facts behind it."""
    if found.backend is None:
        lines = [f"{found.asked}: {found.how}."]
    else:
        where = (
            found.partition + (f" (QoS {found.qos})" if found.qos else "")
            if found.partition
            else None
        )
        lines = [
            f"question {found.question}, {found.asked}:",
            f"  backend:   {found.backend} ({found.where})",
            f"  partition: {where or 'the page lists none that fits: the backend default'}",
            f"  stage:     {found.stage}",
            f"  how:       {found.how}",
            f"  cost:      {found.cost or 'no charging block on the page: not estimated'}",
            f"  queue:     {found.queue}",
        ]
        if found.failover:
            lines.append(f"  failover:  {' → '.join(found.failover)} (question 7)")
        lines.append(
            "  from the pages: " + "; ".join(f"{f.page} {f.key}={f.value}" for f in found.facts)
        )
    lines += [f"  not advised: {name}: {why}" for name, why in found.not_advised.items()]
    return lines


def _advise(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ask = advice.Ask(
        gpu=args.gpu, hours=args.hours, tasks=args.tasks, urgent=args.urgent, smoke=args.smoke
    )
    found = advice.advise_campaign(root=campaign_root(), ask=ask)
    if args.format == "json":
        contract.emit(out, "advise", dataclasses.asdict(found))
    else:
        print("\n".join(text(found)), file=out)
    return 0 if found.backend is not None else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    adv = sub.add_parser(
        "advise",
        help="which backend, partition and stage for a job (the playbook's questions)",
        description="Walk HPC_PLAYBOOK.md's backend questions for a job over this campaign's "
        "authorized backend pages, in campaign.yaml's failover order, and print the backend, "
        "partition or queue, stage, estimated cost (where the page has a charging block), what "
        "to expect of the queue, and the page facts used. Exit 1 when no authorized backend "
        "fits (ask a person).",
    )
    adv.add_argument("--gpu", action="store_true", help="the job needs a GPU")
    adv.add_argument("--hours", type=float, default=1.0, help="hours per task (default 1)")
    adv.add_argument("--tasks", type=int, default=1, help="independent tasks (default 1)")
    adv.add_argument("--urgent", action="store_true", help="it cannot wait in a queue")
    adv.add_argument("--smoke", action="store_true", help="a smoke test of a new config")
    contract.add_format(adv, "text", "json", help=contract.TEXT_OR_JSON)
    adv.set_defaults(handler=_advise)
