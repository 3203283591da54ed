"""POLICY checks: campaign.yaml, backend pages' front matter, the failure catalog, the
ledger's ssh placements against the pages (POLICY006), and the self-stop an idle box needs
(POLICY007, POLICY008: campaignops.checks.selfstop)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from campaignops.backends import registry
from campaignops.checks import selfstop
from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import layout, schema, yamldoc
from campaignops.core.errors import InputError, YamlSyntaxError
from campaignops.core.yamldoc import Locator
from campaignops.model import backendpage, frontmatter
from campaignops.model import catalog_source as catalogs
from campaignops.model import failure_patterns as patterns
from campaignops.model import policy as policy_mod

FAMILY = "POLICY"
SUMMARY = (
    "campaign.yaml, backend pages' front matter, the failure catalog, ledger placements, "
    "idle boxes' self-stop"
)
CODES = code_table(
    Code(
        id="POLICY001",
        message="campaign.yaml: {problem}",
        hint="fix the value; the policy format is in docs/formats.md",
    ),
    Code(
        id="POLICY002",
        message="authorized backend {backend!r} has no page {page}",
        hint="copy backends/TEMPLATE.md to {page} and fill it in, or remove {backend!r} from backends",
    ),
    Code(
        id="POLICY003",
        message="backend page front matter: {problem}",
        hint="fix the front matter; the backend page format is in docs/formats.md",
    ),
    Code(
        id="POLICY004",
        message="failure catalog: {problem}",
        hint="fix the entry; the failure catalog format is in docs/formats.md",
    ),
    Code(
        id="POLICY005",
        message="not valid YAML: {problem}",
        hint="fix the syntax",
    ),
    Code(
        id="POLICY006",
        message="{what}",
        hint="{hint}",
    ),
    *selfstop.CODES,
)

AGENT_UNKNOWN = (
    "agents.may: {name!r} is no command campaign mcp can allow an agent (the ones it can: "
    + ", ".join(policy_mod.AGENT_MAY)
    + "; the read-only tools need no entry)"
)


def check(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.policy.found:
        yield from _policy(ctx)
    for rel in ctx.of(layout.BACKEND):
        yield from _backend_page(ctx, rel)
    for rel, data, syntax in ctx.yamls(layout.FAILURES):
        if syntax is not None:
            yield CODES["POLICY005"].at(rel, syntax.line, syntax.col, problem=syntax.problem)
            continue
        yield from _failures(rel, data, Locator(ctx.reader.read_text(rel) or ""))
    if ctx.of(layout.FAILURES):
        yield from _disables(ctx)
    if ctx.of(layout.LEDGER) or ctx.of(layout.BACKEND):
        yield from _placements(ctx)
    if ctx.policy.found:
        yield from selfstop.check(ctx)


def _placements(ctx: CheckContext) -> Iterator[Finding]:
    """Ledger placements that name what the backend page does not give (a line from another
    clone or a pull request): each backend's rule (registry.doubts), as findings."""
    for found in registry.doubts(ctx.root):
        yield CODES["POLICY006"].at(
            layout.LEDGER_FILE, found.line, 1, what=found.message, hint=found.hint
        )


def _disables(ctx: CheckContext) -> Iterator[Finding]:
    """A ``disable`` id that no earlier catalog file defines (catalogs: the merge order)."""
    docs = []
    for rel in catalogs.ordered(ctx.all_of(layout.FAILURES)):
        parsed = ctx.reader.read_yaml(rel)
        if parsed is None or parsed[1] is not None:
            return  # POLICY005 or an input problem says why; no roster without it
        docs.append((rel, parsed[0]))
    wanted = set(ctx.of(layout.FAILURES))
    for rel, i, entry_id in catalogs.unknown_disables(docs):
        if rel in wanted:
            line, col = Locator(ctx.reader.read_text(rel) or "").at(("disable", i))
            yield CODES["POLICY004"].at(
                rel,
                line,
                col,
                problem=f"disable {entry_id!r}: no earlier catalog file has this id "
                "(failures.local.yaml can disable ids of failures.yaml)",
            )


def _policy(ctx: CheckContext) -> Iterator[Finding]:
    rel = layout.POLICY_FILE
    parsed = ctx.reader.read_yaml(rel)
    if parsed is None:
        return
    data, syntax = parsed
    if syntax is not None:
        yield CODES["POLICY005"].at(rel, syntax.line, syntax.col, problem=syntax.problem)
        return
    loc = Locator(ctx.reader.read_text(rel) or "")
    for err in schema.validate(schema.POLICY, data):
        line, col = loc.at(err.where, key=err.on_key)
        yield CODES["POLICY001"].at(rel, line, col, problem=err.message)
    # Pages live at backends/<name>.md whatever the backends glob says: names map to files.
    for i, name in enumerate(ctx.policy.backends):
        page = backendpage.path_of(name)
        if not ctx.reader.exists(page):
            line, col = loc.at(("backends", i))
            yield CODES["POLICY002"].at(rel, line, col, backend=name, page=page)
    smoke = ctx.policy.smoke_backend
    if smoke is not None and smoke not in ctx.policy.backends:
        line, col = loc.at(("smoke_backend",))
        yield CODES["POLICY001"].at(
            rel, line, col, problem=f"smoke_backend {smoke!r} is not one of backends"
        )
    for i, name in enumerate(policy_mod.agents_may(data)):
        if name not in policy_mod.AGENT_MAY:
            line, col = loc.at(("agents", "may", i))
            yield CODES["POLICY001"].at(rel, line, col, problem=AGENT_UNKNOWN.format(name=name))


def _backend_page(ctx: CheckContext, rel: str) -> Iterator[Finding]:
    text = ctx.reader.read_text(rel)
    if text is None:
        return
    fm = frontmatter.split(text)
    if fm is None:
        yield CODES["POLICY003"].at(
            rel, 1, 1, problem="no front matter (a leading '---' block of YAML)"
        )
        return
    offset = fm.first_line - 1
    try:
        data = yamldoc.load(fm.text, path=rel, line_offset=offset)
    except YamlSyntaxError as exc:
        yield CODES["POLICY003"].at(rel, exc.line + offset, exc.col, problem=exc.problem)
        return
    except InputError as exc:
        ctx.reader.problems.setdefault(rel, exc)
        return
    loc = Locator(fm.text, line_offset=offset)
    errors = list(schema.validate(schema.BACKEND, data))
    for err in errors:
        line, col = loc.at(err.where, key=err.on_key)
        yield CODES["POLICY003"].at(rel, line, col, problem=err.message)
    stem = PurePosixPath(rel).stem
    if not errors and isinstance(data, dict) and data.get("platform") != stem:
        line, col = loc.at(("platform",))
        yield CODES["POLICY003"].at(
            rel,
            line,
            col,
            problem=f"platform {data.get('platform')!r} does not match the page name {stem!r}",
        )


def _failures(rel: str, data: Any, loc: Locator) -> Iterator[Finding]:
    errors = list(schema.validate(schema.FAILURES, data))
    for err in errors:
        line, col = loc.at(err.where, key=err.on_key)
        yield CODES["POLICY004"].at(rel, line, col, problem=err.message)
    if errors:
        return
    # id -> index of its first entry; its line is located only for a duplicate (locating
    # composes the whole catalog, ~200 KB, which a clean catalog never needs).
    seen: dict[str, int] = {}
    for i, entry in enumerate(data["failures"]):
        at = ("failures", i)
        if entry["id"] in seen:
            line, col = loc.at((*at, "id"))
            first = loc.at(("failures", seen[entry["id"]], "id"))[0]
            yield CODES["POLICY004"].at(
                rel, line, col, problem=f"duplicate id {entry['id']!r} (first at line {first})"
            )
        else:
            seen[entry["id"]] = i
        compiled: list[re.Pattern[str]] = []
        yield from _unsafe(rel, loc, at, "matchers", entry["matchers"], compiled)
        yield from _unsafe(rel, loc, at, "table_header", entry.get("table_header") or (), [])
        for j, sample in enumerate(entry.get("samples") or ()):
            if compiled and not any(rx.search(sample) for rx in compiled):
                line, col = loc.at((*at, "samples", j))
                yield CODES["POLICY004"].at(
                    rel,
                    line,
                    col,
                    problem=f"sample {sample!r} is matched by none of the entry's matchers",
                )


def _unsafe(
    rel: str,
    loc: Locator,
    at: tuple[str | int, ...],
    key: str,
    sources: Any,
    compiled: list[re.Pattern[str]],
) -> Iterator[Finding]:
    """A finding for each pattern under ``key`` the engine cannot use; the usable ones are
    appended to ``compiled``."""
    for j, pattern in enumerate(sources):
        unsafe = patterns.problem(pattern)
        if unsafe is None:
            compiled.append(re.compile(pattern, re.IGNORECASE))
            continue
        line, col = loc.at((*at, key, j))
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        what = "matcher" if key == "matchers" else "table header"
        yield CODES["POLICY004"].at(
            rel, line, col, problem=f"{what} {shown!r} cannot be used: {unsafe}"
        )
