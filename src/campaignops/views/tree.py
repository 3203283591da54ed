"""The backend-tree view: HPC_PLAYBOOK.md's seven questions, answered with this campaign's pages.

`campaign render` rebuilds it when campaign.yaml's backends or a page change, and `campaign
check` (VIEW001) says when it is out of step; `campaign advise` walks the same questions for one
job (campaignops.backends.advice). Where a backend runs comes from its page and Kind
(advice.place), never from its name: a cluster, a rented box, this machine; a page whose kind
has no runner but a scheduler (Kubernetes) is a cluster that may bill like a rented box. The
template's block holds the same text as Jinja, so a fresh campaign starts in step
(tests/template/test_generated.py checks every generated campaign).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from campaignops.backends import advice
from campaignops.model import backendpage

RENTED_NOTE = "(money: a person decides, within the cloud cap)"


def _links(names: Sequence[str]) -> str:
    return ", ".join(f"[`{n}`]({backendpage.path_of(n)})" for n in names)


def _unrun_cluster(page: Mapping[str, Any] | None) -> bool:
    """A page kind with no runner that names a scheduler of its own (e.g. Kubernetes)."""
    if page is None or advice.place(page) is not None:
        return False
    return str(page.get("scheduler") or "none") not in ("none", "")


def _q3(clusters: list[str], rented: list[str], nothing: str) -> str:
    if clusters:
        line = f"\n   → the production partition of {_links(clusters)}."
        if rented:
            line += (
                " If it is urgent or the queue is long: a rented GPU,\n"
                f"   {_links(rented)} {RENTED_NOTE}."
            )
        return line
    if rented:
        return f"\n   → a rented GPU, {_links(rented)} {RENTED_NOTE}."
    return f"\n   → {nothing}."


def _q4(clusters: list[str], rented: list[str], nothing: str) -> str:
    if clusters:
        return (
            f" → the production partition of {_links(clusters)}. Beyond about 6 hours an\n"
            "   allocation costs less than a rented GPU."
        )
    if rented:
        return (
            f" → a rented GPU, {_links(rented)}, with checkpoints and a person's go-ahead;\n"
            "   beyond about 6 hours an HPC allocation would cost less."
        )
    return f" → {nothing}."


def _nothing(here: list[str]) -> str:
    if here:
        return (
            f"{_links(here)} if the job fits there, otherwise ask a person (no HPC or rented "
            "backend is authorized)"
        )
    return "ask a person: no backend for this is authorized"


def _smoke(smoke: str | None, hpc: list[str], rented: list[str]) -> str:
    link = f"[`{smoke}`]({backendpage.path_of(str(smoke))})"
    if smoke in hpc:
        return link + ", on the partition or queue its page marks for smoke"
    return link + (" (money: a person decides)" if smoke in rented else "")


def _q6(clusters: list[str], rented: list[str], fanout: list[str], nothing: str) -> str:
    line = f"   {_links(fanout) if fanout else nothing}."
    if clusters and rented:
        line += (
            f" Rented overflow ({_links(rented)}) only if the cluster throttles\n"
            "   concurrency and the budget allows."
        )
    return line


def _q7(backends: Sequence[str]) -> str:
    if len(backends) > 1:
        return (
            " → the next one in\n   the failover order of `campaign.yaml`: "
            + " → ".join(backends)
            + ". Say so in the commit message."
        )
    return " → there is no second\n   authorized backend: wait, or ask a person about adding one."


def render(
    backends: Sequence[str], smoke: str | None, pages: Mapping[str, Mapping[str, Any] | None]
) -> str:
    """The seven questions as HPC_PLAYBOOK.md shows them, for these backends and pages."""
    places = {n: advice.place(pages.get(n)) for n in backends}
    hpc = [n for n in backends if places[n] == advice.CLUSTER]
    k8s = [n for n in backends if _unrun_cluster(pages.get(n))]
    rented = [n for n in backends if places[n] == advice.BOX]
    here = [n for n in backends if places[n] == advice.HERE]
    clusters, nothing = hpc + k8s, _nothing(here)
    first = (
        _links(here) or "your own machine, outside `campaign submit` (`local` is not authorized)"
    )
    lines = [
        "1. **A CPU task under 30 minutes** (file munging, lint, plots, analysis)?",
        f"   → {first}: no queue, no setup cost.",
        "2. **A smoke test of a new or changed config, or a GPU job under an hour?**",
        f"   → the smoke backend {_smoke(smoke, hpc, rented)}.",
        "3. **A single 1–8 hour job with no dependencies?**" + _q3(clusters, rented, nothing),
        "4. **8–24 hours?**" + _q4(clusters, rented, nothing),
        "5. **Over 24 hours?** → a chain of shorter jobs that checkpoint and restart",
        "   (`campaign submit … --after JOBID`). A long QoS only when restart is impossible, and"
        " only with a",
        "   person's agreement.",
        "6. **An ensemble of 50+ independent runs?** → one array job (one submission) with a"
        " concurrency cap on",
        _q6(clusters, rented, clusters or rented or here, nothing),
        "7. **The first backend unreachable** (VPN, maintenance, expired allocation)?"
        + _q7(backends),
    ]
    if k8s:
        lines += [
            "",
            f"The Kubernetes cluster ({_links(k8s)}) counts as HPC in questions 3–6 when its"
            " nodes are paid",
            "for anyway, and as a rented GPU when nodes are billed while they run: its page says"
            " which.",
        ]
    return "\n".join(lines)
