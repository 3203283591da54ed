"""MAN checks of what `campaign submit` would refuse past the manifest's own shape: a target
with no command (MAN016), a backend whose page has no runner (MAN017), a request the backend
page's row does not allow (MAN018: a time limit over its max_walltime, a node count outside
its min_nodes..max_nodes).

Each reads the same rule the runner applies (makeup.command's, registry.for_page's,
model/pagefit.py's), so a manifest `campaign check` passes is one submit does not refuse for
these reasons (tests/checks/test_check_equals_run.py lists the refusals).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import registry, spending
from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core.errors import CampaignError
from campaignops.core.yamldoc import Locator
from campaignops.model import (
    backendpage,
    manifest,
    manifest_keys,
    pagefit,
    stageresources,
    walltime,
)
from campaignops.model import policy as policy_mod
from campaignops.model.jobspec import Resources

CODES = code_table(
    Code(
        id="MAN016",
        message="{what} has no command: no cmd, and the manifest no default_cmd",
        hint="give the {owner} a cmd (python train.py; each arg is added as --key value), or "
        "the manifest a default_cmd",
    ),
    Code(
        id="MAN017",
        message="backend {backend!r} ({why}) is a {kind} page, which campaign submit has no "
        "runner for",
        hint="start such jobs by hand as {page} says, or set backend: to an authorized "
        "backend the runner drives (its page one of: {runners})",
    ),
    Code(
        id="MAN019",
        message="{key}: {problem}",
        hint="{fix}",
    ),
    Code(
        id="MAN018",
        message="{stage} on {backend}: {problem}",
        hint="{fix}",
    ),
)
# Production first: a misfit single shares is reported once, as production's.
STAGES = ("smoke", "production", "single")


@dataclass(frozen=True)
class Route:
    """Where a stage of this manifest goes: the backend's name and page (None: unreadable or
    not authorized; other checks report that)."""

    stage: str
    backend: str
    page: Mapping[str, Any] | None
    smoke_max_minutes: int | None = None  # stages.smoke_max_minutes (smoke routes)


def pages(ctx: CheckContext) -> dict[str, Mapping[str, Any]]:
    """The authorized backends' page front matter (pages that cannot be read are left out)."""
    found: dict[str, Mapping[str, Any]] = {}
    for name in ctx.policy.backends:
        page = backendpage.path_of(name)
        # A missing page is POLICY's finding; reading it here would report it a second time.
        if not backendpage.is_name(name) or not ctx.reader.is_file(page):
            continue
        try:
            found[name] = backendpage.front_matter(ctx.reader.read_text(page) or "", path=page)
        except CampaignError:
            continue  # the page's own check reports it
    return found


def box_backends(pages: Mapping[str, Mapping[str, Any]], root: Path) -> dict[str, frozenset[str]]:
    """The authorized backends whose executor runs the experiment-queue keys a scheduler does
    not (manifest_keys.BOX_KEYS) on every job: their Kind says so (``box_keys``: ssh boxes);
    each with the names and hosts its instances answer to (what ``ssh:`` may name)."""
    return {
        n: aliases(root, n, p)
        for n, p in pages.items()
        if (kind := registry.kind_of(p)) and kind.box_keys
    }


def aliases(root: Path, name: str, page: Mapping[str, Any] | None) -> frozenset[str]:
    """What the boxes of backend ``name`` answer to in ``ssh:`` (its Kind's ``aliases``)."""
    kind = registry.kind_of(page)
    return kind.aliases(root, name, page) if kind is not None else frozenset()


def gpu_hosts(pages: Mapping[str, Mapping[str, Any] | None]) -> dict[str, bool]:
    """The ``kind: local`` backends among ``pages``, each with whether its page lists
    ``gpus:`` (manifest_keys.local_box: where a GPU list runs the box keys locally)."""
    return {
        name: manifest_keys.page_gpus(page) is not None
        for name, page in pages.items()
        if page is not None and page.get("kind") == "local"
    }


def routes(
    policy: policy_mod.Policy, doc: Any, pages: Mapping[str, Mapping[str, Any]]
) -> tuple[Route, ...]:
    """Where each stage of ``doc`` goes without --backend (policy.backend_for), with the page."""
    return tuple(
        Route(stage, name, pages.get(name), policy.smoke_max_minutes if stage == "smoke" else None)
        for stage in STAGES
        if (name := policy_mod.backend_for(policy, stage, doc))
    )


def check(
    rel: str,
    doc: Mapping[str, Any],
    loc: Locator,
    *,
    routes: Sequence[Route],
    policy: policy_mod.Policy | None = None,
) -> Iterator[Finding]:
    yield from _commands(rel, doc, loc)
    yield from _runners(rel, doc, loc, routes)
    yield from _fits(rel, doc, loc, routes, policy)


def _commands(rel: str, doc: Mapping[str, Any], loc: Locator) -> Iterator[Finding]:
    default = doc.get("default_cmd")
    if (isinstance(default, str) and default.strip()) or "queue" in doc:
        return  # a queue manifest's default_cmd is MAN011's
    for block in manifest.blocks(doc):
        jobs_at = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            if not _has_cmd(job):
                line, col = loc.at((*jobs_at, j), key=False)
                yield CODES["MAN016"].at(rel, line, col, what=f"job {job['id']!r}", owner="job")
        if block.grid and not _has_cmd(block.template):
            where = f" of phase {block.phase!r}" if block.phase else ""
            line, col = loc.at((*block.at, "grid"), key=True)
            yield CODES["MAN016"].at(
                rel, line, col, what=f"the grid{where}", owner="grid's template"
            )


def _has_cmd(mapping: Mapping[str, Any]) -> bool:
    cmd = mapping.get("cmd")
    return isinstance(cmd, str) and bool(cmd.strip())


def _runners(
    rel: str, doc: Mapping[str, Any], loc: Locator, routes: Sequence[Route]
) -> Iterator[Finding]:
    stages: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for route in routes:
        if route.page is not None and registry.kind_of(route.page) is None:
            stages.setdefault(route.backend, []).append(route.stage)
            kinds[route.backend] = str(route.page.get("kind") or "unknown")
    for backend, at_stages in stages.items():
        named = doc.get("backend") == backend
        line, col = loc.at(("backend",)) if named else (1, 1)
        why = "this manifest's backend" if named else "where " + "/".join(at_stages) + " goes"
        yield CODES["MAN017"].at(
            rel,
            line,
            col,
            backend=backend,
            why=why,
            kind=kinds[backend],
            page=backendpage.path_of(backend),
            runners=", ".join(kind.name for kind in registry.KINDS),
        )


def _fits(
    rel: str,
    doc: Mapping[str, Any],
    loc: Locator,
    routes: Sequence[Route],
    policy: policy_mod.Policy | None,
) -> Iterator[Finding]:
    """What the pages (and the policy's caps) say of each stage's request: MAN018."""
    phases: list[str | None] = [None, *(p.name for p in manifest.phases(doc))]
    seen: set[tuple[str, tuple[str | int, ...] | None]] = set()
    for route in routes:
        if route.page is None:
            continue
        for phase in phases:
            res = stageresources.resources_for(doc, phase, route.stage)
            page_path = backendpage.path_of(route.backend)
            misfits = pagefit.misfits(res, route.page, page_path=page_path)
            too_long = pagefit.smoke_too_long(_seconds(res.time), route.smoke_max_minutes)
            blocked = _unbudgeted(route, policy, res)
            # No allocation size: one edit of campaign.yaml, whatever the stage asks for.
            key = "allocation" if blocked and blocked[0] == spending.NO_ALLOCATION else "time"
            unpriced = [pagefit.Misfit(key, *blocked)] if blocked else []
            for misfit in [*misfits, *([too_long] if too_long else []), *unpriced]:
                at = source(doc, phase, route.stage, misfit.key)
                if (misfit.problem, at) in seen:
                    continue
                seen.add((misfit.problem, at))
                line, col = loc.at(at) if at else (1, 1)
                plain = misfit.key in (*pagefit.PLACES, "allocation")
                where = "" if plain else f"resources.{misfit.key}: "
                yield CODES["MAN018"].at(
                    rel,
                    line,
                    col,
                    stage=route.stage,
                    backend=route.backend,
                    problem=where + misfit.problem,
                    fix=misfit.fix,
                )


def _unbudgeted(
    route: Route, policy: policy_mod.Policy | None, res: Resources
) -> tuple[str, str] | None:
    """Why the budget gate refuses this request whatever the ledger holds (the files decide
    it): nothing to price it by, or one task alone over the cap."""
    if policy is None:
        return None
    seconds = _seconds(res.time)
    return spending.unpriced(
        route.backend, route.page, policy, res, seconds
    ) or spending.over_alone(route.backend, route.page, policy, res, seconds)


def box_keys(
    rel: str,
    doc: Mapping[str, Any],
    loc: Locator,
    *,
    where: object,
    boxes: Mapping[str, frozenset[str]],
    on_box: bool,
) -> Iterator[Finding]:
    """The experiment-queue's box keys (conda, conda_hook, gpu_free_threshold_mib, ssh) where
    an ssh backend could run them: ``ssh:`` must name an instance of the manifest's ssh
    backend; off a box, ONE finding gives the one edit that runs them all (backend:)."""
    alias = doc.get("ssh")
    if isinstance(where, str) and where in boxes:
        if isinstance(alias, str) and alias not in boxes[where]:
            line, col = loc.at(("ssh",))
            yield CODES["MAN019"].at(
                rel,
                line,
                col,
                key="ssh",
                problem=NO_INSTANCE.format(
                    alias=alias, backend=where, listed=", ".join(sorted(boxes[where])) or "none"
                ),
                fix=ADD_INSTANCE.format(alias=alias, page=backendpage.path_of(where)),
            )
        return
    present = [k for k in doc if k in manifest_keys.SSH_KEYS and (k == "ssh" or not on_box)]
    if not present:
        return
    named = [b for b in sorted(boxes) if alias in boxes[b]] or sorted(boxes)
    edit = (
        f"add `backend: {named[0]}`"
        if len(named) == 1
        else ("add backend: with one of " + ", ".join(named))
    )
    if isinstance(alias, str) and len(named) == 1 and alias not in boxes[named[0]]:
        edit += ", and " + ADD_INSTANCE.format(alias=alias, page=backendpage.path_of(named[0]))
    line, col = loc.at((present[0],), key=True)
    yield CODES["MAN019"].at(
        rel,
        line,
        col,
        key=", ".join(present),
        problem=OFF_BOX.format(
            where=f"{where} is none" if where else "this manifest names no backend"
        ),
        fix=f"{edit}: an ssh backend's executor runs them on its instances",
    )


NO_INSTANCE = "{alias!r} is no instance of {backend} (its instances answer to: {listed})"
ADD_INSTANCE = (
    "add the box to {page}'s instances: - {{name: {alias}, host: {alias}, "
    "workdir: /absolute/dir/on/the/box, gpus: [0]}} (host: its ~/.ssh/config alias)"
)
OFF_BOX = "run only by an ssh backend's executor, and {where}: the keys would be ignored"


def _seconds(text: str | None) -> int | None:
    try:
        return None if text is None else walltime.parse(text)
    except CampaignError:
        return None  # the schema's finding


def source(
    doc: Mapping[str, Any], phase: str | None, stage: str, key: str
) -> tuple[str | int, ...] | None:
    """Where a finding about resources ``key`` points: the layer that set it, else the one
    that set the partition or queue; an allocation's at the manifest's backend."""
    if key == "allocation":
        return ("backend",) if "backend" in doc else None
    return next(
        (
            found
            for asked in (key, "partition", "queue")
            if (found := stageresources.source_of(doc, phase, stage, asked))
        ),
        None,
    )
