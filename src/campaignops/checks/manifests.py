"""MAN checks: manifests: schema, target ids, placeholders, phases, outputs, backends, and
keys the runner does not run (manifest_keys)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from campaignops.checks import manifest_runs, manifest_script
from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import schema
from campaignops.core.yamldoc import Locator
from campaignops.model import manifest, manifest_keys, queuefile
from campaignops.model import policy as policy_mod

FAMILY = "MAN"
SUMMARY = "manifests: schema, target ids, placeholders, phases, outputs, backends, keys not run"
CODES = code_table(
    Code(
        id="MAN001",
        message="{problem}",
        hint="fix the value at this line; the format is in docs/formats.md (manifest)",
    ),
    Code(
        id="MAN002",
        message="duplicate target id {target!r} ({origin})",
        hint="give every target a unique id; for grids, put every grid key in template.id",
    ),
    Code(
        id="MAN003",
        message="placeholder ${{{name}}} is not defined by the grid{where}",
        hint="add {name} to the grid, or write the value literally",
    ),
    Code(
        id="MAN004",
        message="phase {phase!r} depends on {missing!r}, which is not a phase of this manifest",
        hint="name an existing phase in depends_on (phases: {known})",
    ),
    Code(
        id="MAN005",
        message="phases depend on each other in a cycle: {cycle}",
        hint="break the cycle; depends_on must form a chain or a tree",
    ),
    Code(
        id="MAN006",
        message="targets {first!r} and {second!r} write the same output {output!r}",
        hint="give each target its own output path (put the target id in it) so parallel cells never share mutable state",
    ),
    Code(
        id="MAN007",
        message="backend {backend!r} is not authorized by campaign.yaml",
        hint="use one of: {authorized}; or add it to backends in campaign.yaml (with a backends/{backend}.md page)",
    ),
    Code(
        id="MAN008",
        message="not valid YAML: {problem}",
        hint='fix the syntax; in flow mappings quote placeholders: {{seed: "${{seed}}"}}',
    ),
    Code(
        id="MAN010",
        message="duplicate phase name {phase!r} (first at line {first_line})",
        hint="give every phase a unique name: depends_on refers to phases by name",
    ),
    Code(
        id="MAN011",
        message="queue manifest: {problem}",
        hint="{fix}",
    ),
    Code(
        id="MAN009",
        message="grid expands to {count:,} targets, more than the {limit:,} this check expands",
        hint="split the grid into several manifests or phases",
    ),
    Code(
        id="MAN012",
        message="{key} is accepted but the runner does not run it: {what} ({when})",
        hint="{fix}; campaign submit refuses the manifest while it holds the key",
    ),
    Code(
        id="MAN013",
        message="preconditions[{index}]: {problem}",
        hint="{fix}",
    ),
    Code(
        id="MAN014",
        message="{what} {problem}",
        hint="{fix}",
    ),
    Code(
        id="MAN015",
        message="{what} {value!r} {problem}",
        hint="{fix}",
    ),
    *manifest_runs.CODES.values(),
)

ID_FIX = "change the id (for a grid: template.id or the grid values) to one word"
OPTION_FIX = "each key becomes --key on the command line: rename it"


def check(ctx: CheckContext) -> Iterator[Finding]:
    authorized = set(ctx.policy.backends) if ctx.policy.found else None
    pages = manifest_runs.pages(ctx) if ctx.policy.found else {}
    boxes = manifest_runs.box_backends(pages, ctx.root)
    hosts = manifest_runs.gpu_hosts(pages)
    for rel, data, syntax in ctx.yamls("manifests"):
        if syntax is not None:
            yield CODES["MAN008"].at(rel, syntax.line, syntax.col, problem=syntax.problem)
            continue
        text = ctx.reader.read_text(rel) or ""
        loc = Locator(text)
        findings = list(
            check_document(
                rel,
                data,
                loc,
                authorized=authorized,
                boxes=boxes,
                hosts=hosts,
                routes=manifest_runs.routes(ctx.policy, data, pages) if ctx.policy.found else (),
                policy=ctx.policy if ctx.policy.found else None,
            )
        )
        yield from findings
        queue = data.get("queue") if isinstance(data, Mapping) else None
        if not findings and isinstance(queue, str) and not ctx.reader.is_file(queue):
            line, col = loc.at(("queue",))
            yield CODES["MAN011"].at(
                rel, line, col, problem=f"queue file {queue!r} not found", fix=QUEUE_MISSING
            )


def check_document(
    rel: str,
    doc: Any,
    loc: Locator,
    *,
    authorized: set[str] | None,
    boxes: Mapping[str, frozenset[str]] | None = None,
    backend: str | None = None,
    hosts: Mapping[str, bool] | None = None,
    routes: Sequence[manifest_runs.Route] = (),
    policy: policy_mod.Policy | None = None,
) -> Iterator[Finding]:
    """All MAN findings for one parsed manifest. Semantic checks run only on a schema-valid one.
    ``routes``: where its stages go (the backends' pages), for what submit would refuse there."""
    errors = list(schema.validate(schema.MANIFEST, doc))
    for err in errors:
        line, col = loc.at(err.where, key=err.on_key)
        yield CODES["MAN001"].at(rel, line, col, problem=err.message)
    if errors:
        return
    too_big = False
    for block in manifest.blocks(doc):
        size = manifest.grid_size(block.grid)
        if size > manifest.MAX_TARGETS:
            too_big = True
            line, col = loc.at((*block.at, "grid"), key=True)
            yield CODES["MAN009"].at(rel, line, col, count=size, limit=manifest.MAX_TARGETS)
        yield from _placeholders(rel, block, loc)
    yield from _phases(rel, doc, loc)
    yield from _queue(rel, doc, loc)
    # ``backend``: where the job goes (submit's --backend); else the manifest's own.
    # ``hosts``: local backends, each with whether its page lists GPUs (gpu_hosts).
    where, hosts, boxes = backend or doc.get("backend"), hosts or {}, boxes or {}
    on_box = where in boxes or (
        where in hosts and manifest_keys.local_box(doc, page_lists_gpus=hosts[where])
    )
    # With an ssh backend authorized, the box keys are judged together (one edit: backend:).
    skip = manifest_keys.SSH_KEYS if boxes else manifest_keys.BOX_KEYS if on_box else frozenset()
    yield from _keys(rel, doc, loc, skip=skip)
    if boxes:
        yield from manifest_runs.box_keys(rel, doc, loc, where=where, boxes=boxes, on_box=on_box)
    yield from _arg_keys(rel, doc, loc)
    if authorized is not None:
        yield from _backends(rel, doc, loc, authorized)
    if not too_big:
        # Expanded once, ids and outputs only (no check here reads a cell's args or cmd).
        targets = tuple(manifest.targets(doc, named_only=True))
        yield from _targets(rel, targets, loc)
        yield from manifest_runs.check(rel, doc, loc, routes=routes, policy=policy)
        # The runner's own default when campaign.yaml names no campaign (runner/plan.py).
        campaign = (policy.name if policy is not None else "") or "campaign"
        yield from manifest_script.check(
            rel, doc, loc, routes=routes, campaign=campaign, targets=targets
        )


def _placeholders(rel: str, block: manifest.Block, loc: Locator) -> Iterator[Finding]:
    if not block.grid:
        return
    where = f" of phase {block.phase!r}" if block.phase else ""
    reported: set[tuple[str, tuple[str | int, ...]]] = set()
    for name, sub in manifest.placeholders(block.template):
        if name in block.grid or manifest.ENV_NAME.match(name) or (name, sub) in reported:
            continue
        reported.add((name, sub))
        line, col = loc.at((*block.at, "template", *sub))
        yield CODES["MAN003"].at(rel, line, col, name=name, where=where)


def _phases(rel: str, doc: Mapping[str, Any], loc: Locator) -> Iterator[Finding]:
    phases = manifest.phases(doc)
    first: dict[str, manifest.Phase] = {}
    for ph in phases:
        if ph.name in first:
            line, col = loc.at((*ph.at, "name"))
            first_line, _ = loc.at((*first[ph.name].at, "name"))
            yield CODES["MAN010"].at(rel, line, col, phase=ph.name, first_line=first_line)
        else:
            first[ph.name] = ph
    known = ", ".join(first) or "none"
    for ph in phases:
        for dep in ph.depends_on:
            if dep not in first:
                line, col = loc.at((*ph.at, "depends_on"))
                yield CODES["MAN004"].at(rel, line, col, phase=ph.name, missing=dep, known=known)
    graph = {name: [d for d in ph.depends_on if d in first] for name, ph in first.items()}
    cyc = manifest.cycle(graph)
    if cyc:
        line, col = loc.at((*first[cyc[0]].at, "depends_on"))
        yield CODES["MAN005"].at(rel, line, col, cycle=" -> ".join(cyc))


QUEUE_MISSING = "write the path relative to the campaign root, e.g. queues/example.txt"
QUEUE_ALONE = (
    "keep the queue's manifest to the queue; put jobs, grids and phases in another manifest"
)
QUEUE_WRAPPER = "set default_cmd to the wrapper that runs one cell: bash scripts/run_one.v1.sh"
QUEUE_SMOKE = (
    "a queue line passes <cfg> <task> [epochs]; shorten a smoke with smoke.args: {epochs: N}"
)


def _queue(rel: str, doc: Mapping[str, Any], loc: Locator) -> Iterator[Finding]:
    """A manifest whose targets are a queue file's cells: what the cells need to run."""
    queue = doc.get("queue")
    if not isinstance(queue, str):
        return
    parts = queue.split("/")
    if queue.startswith("/") or ".." in parts:
        line, col = loc.at(("queue",))
        problem = f"queue path {queue!r} must stay inside the campaign (relative, no '..')"
        yield CODES["MAN011"].at(rel, line, col, problem=problem, fix=QUEUE_MISSING)
    for key in ("jobs", "grid", "template", "phases"):
        if key in doc:
            line, col = loc.at((key,), key=True)
            problem = f"{key!r} next to 'queue': the queue's cells are this manifest's targets"
            yield CODES["MAN011"].at(rel, line, col, problem=problem, fix=QUEUE_ALONE)
    if not isinstance(doc.get("default_cmd"), str) or not doc["default_cmd"].strip():
        line, col = loc.at(("queue",), key=True)
        problem = "no default_cmd to run each cell with"
        yield CODES["MAN011"].at(rel, line, col, problem=problem, fix=QUEUE_WRAPPER)
    smoke = doc.get("smoke")
    args = smoke.get("args") if isinstance(smoke, Mapping) else None
    for key, value in (args or {}).items():
        if key not in manifest.QUEUE_FIELDS[2:]:
            line, col = loc.at(("smoke", "args", key), key=True)
            problem = f"smoke.args sets {key!r}, which is not a field of a queue line"
            yield CODES["MAN011"].at(rel, line, col, problem=problem, fix=QUEUE_SMOKE)
        elif (wrong := queuefile.epochs_problem(value)) is not None:
            line, col = loc.at(("smoke", "args", key))
            problem = f"smoke.args.epochs: {wrong}"
            yield CODES["MAN011"].at(rel, line, col, problem=problem, fix=QUEUE_SMOKE)


def _arg_keys(rel: str, doc: Mapping[str, Any], loc: Locator) -> Iterator[Finding]:
    for where, key in manifest.arg_keys(doc):
        problem = manifest.option_problem(key)
        if problem is not None:
            line, col = loc.at(where, key=True)
            what = ".".join(str(w) for w in where[:-1]) + " key"
            yield CODES["MAN015"].at(
                rel, line, col, what=what, value=key, problem=problem, fix=OPTION_FIX
            )


def _keys(
    rel: str, doc: Mapping[str, Any], loc: Locator, *, skip: frozenset[str] = frozenset()
) -> Iterator[Finding]:
    """Keys the runner does not run, preconditions it could not check, outputs it would ignore."""
    for where, shown, why in manifest_keys.not_run(doc, skip=skip):
        line, col = loc.at(where, key=True)
        yield CODES["MAN012"].at(
            rel, line, col, key=shown, what=why.what, when=why.when, fix=why.fix
        )
    for where, problem, fix in manifest_keys.precondition_problems(doc):
        line, col = loc.at(where)
        yield CODES["MAN013"].at(rel, line, col, index=where[1], problem=problem, fix=fix)
    for where in manifest_keys.both_outputs(doc):
        line, col = loc.at(where, key=True)
        yield CODES["MAN014"].at(
            rel, line, col, what="output_check", problem=BOTH_OUTPUTS, fix=manifest_keys.BOTH_FIX
        )


BOTH_OUTPUTS = "is next to output: only output is checked after the task"


def _backends(
    rel: str, doc: Mapping[str, Any], loc: Locator, authorized: set[str]
) -> Iterator[Finding]:
    named: list[tuple[str, tuple[str | int, ...]]] = []
    if isinstance(doc.get("backend"), str):
        named.append((doc["backend"], ("backend",)))
    for block in manifest.blocks(doc):
        jobs_at = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            if isinstance(job.get("backend"), str):
                named.append((job["backend"], (*jobs_at, j, "backend")))
    allowed = ", ".join(sorted(authorized)) or "(none)"
    for backend, where in named:
        if backend not in authorized:
            line, col = loc.at(where)
            yield CODES["MAN007"].at(rel, line, col, backend=backend, authorized=allowed)


def _targets(rel: str, targets: Sequence[manifest.Target], loc: Locator) -> Iterator[Finding]:
    first_id: dict[str, manifest.Target] = {}
    first_out: dict[str, manifest.Target] = {}
    # A grid template that collides reports once, not once per colliding cell.
    dup_reported: set[tuple[str | int, ...]] = set()
    out_reported: set[tuple[str | int, ...]] = set()
    bad_reported: set[tuple[str | int, ...]] = set()
    id_reported: set[tuple[str | int, ...]] = set()
    for t in targets:
        wrong = manifest.id_problem(t.id)
        if wrong is not None and t.id_at not in id_reported:
            if t.cell:
                id_reported.add(t.id_at)
            line, col = loc.at(t.id_at)
            # The cell's values as repr: one holding a line separator must not split the report.
            cell = ", ".join(f"{k}={v!r}" for k, v in t.cell.items())
            what = f"target id (grid cell {cell})" if t.cell else "target id"
            yield CODES["MAN015"].at(
                rel, line, col, what=what, value=t.id, problem=wrong, fix=ID_FIX
            )
        if t.id in first_id and t.id_at not in dup_reported:
            if t.cell:
                dup_reported.add(t.id_at)
            line, col = loc.at(t.id_at)
            yield CODES["MAN002"].at(
                rel, line, col, target=t.id, origin=_origin(first_id[t.id], t, loc)
            )
        first_id.setdefault(t.id, t)
        if t.output is None or t.output_at is None:
            continue
        problem = manifest_keys.output_problem_of(t)
        if problem is not None and t.output_at not in bad_reported:
            if t.cell:
                bad_reported.add(t.output_at)
            line, col = loc.at(t.output_at)
            yield CODES["MAN014"].at(
                rel,
                line,
                col,
                what=f"output {t.output!r} of target {t.id!r}",
                problem=problem,
                fix=manifest_keys.OUTPUT_FIX.format(target=t.id),
            )
        out = posixpath.normpath(t.output)
        if out in first_out and first_out[out].id != t.id and t.output_at not in out_reported:
            if t.cell:
                out_reported.add(t.output_at)
            line, col = loc.at(t.output_at)
            yield CODES["MAN006"].at(
                rel, line, col, first=first_out[out].id, second=t.id, output=out
            )
        first_out.setdefault(out, t)


def _cell(t: manifest.Target) -> str:
    return ", ".join(f"{k}={v}" for k, v in t.cell.items())


def _origin(first: manifest.Target, dup: manifest.Target, loc: Locator) -> str:
    if first.cell and dup.cell and first.id_at == dup.id_at:
        return f"grid cells {_cell(first)} and {_cell(dup)} both expand to it"
    return f"first defined at line {loc.at(first.id_at)[0]}"
