"""POLICY007 and POLICY008: what ``budgets.idle_stop_minutes`` asks of the authorized ssh pages.

With the setting on, an idle box runs its page's ``self_stop`` from inside (docs/runner.md, "Idle
boxes stop themselves"): a page that gives none leaves its boxes billing however idle they are
(POLICY007, at the setting in campaign.yaml), and a stop that deletes the instance or its disk
loses every output not yet pulled (POLICY008, at the page's ``self_stop``).
"""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.backends import registry
from campaignops.checks import manifest_runs
from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding
from campaignops.core import layout
from campaignops.core.yamldoc import Locator
from campaignops.model import backendpage, frontmatter

NO_SELF_STOP = Code(
    id="POLICY007",
    message="budgets.idle_stop_minutes is {minutes:g} but {page} gives no self_stop: its "
    "instances keep billing however long they are idle",
    hint="add self_stop: (the command that stops an instance from inside it) to {page}'s front "
    "matter where the provider has one (docs/formats.md, Backend pages), or remove {backend!r} "
    "from backends; the page says why when its provider has none",
)
IRREVERSIBLE = Code(
    id="POLICY008",
    message="self_stop {command!r} deletes the instance or its disk (self_stop_irreversible, "
    "else meter_stop_irreversible) and budgets.idle_stop_minutes runs it on an idle box: "
    "outputs not yet pulled are lost with it",
    hint="use a stop that keeps the disk and set self_stop_irreversible: false where the "
    "provider's docs say so; if deleting is meant, campaign check --ignore POLICY008",
)
CODES = (NO_SELF_STOP, IRREVERSIBLE)


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Both findings, when the setting is on and campaign.yaml or a page is checked."""
    minutes = ctx.policy.idle_stop_minutes
    if minutes is None or not (ctx.of(layout.POLICY) or ctx.of(layout.BACKEND)):
        return
    found = manifest_runs.pages(ctx)
    for name in ctx.policy.backends:
        page = found.get(name)
        kind = registry.kind_of(page)
        if page is None or kind is None or not kind.self_stops:
            continue
        stop = backendpage.self_stop(page)
        if stop is None:
            line, col = _policy_at(ctx)
            yield NO_SELF_STOP.at(
                layout.POLICY_FILE,
                line,
                col,
                minutes=minutes,
                page=backendpage.path_of(name),
                backend=name,
            )
        elif stop.irreversible:
            rel = backendpage.path_of(name)
            line, col = _page_at(ctx, rel)
            yield IRREVERSIBLE.at(rel, line, col, command=stop.command)


def _policy_at(ctx: CheckContext) -> tuple[int, int]:
    text = ctx.reader.read_text(layout.POLICY_FILE) or ""
    return Locator(text).at(("budgets", "idle_stop_minutes"), key=True)


def _page_at(ctx: CheckContext, rel: str) -> tuple[int, int]:
    fm = frontmatter.split(ctx.reader.read_text(rel) or "")
    if fm is None:
        return 1, 1
    return Locator(fm.text, line_offset=fm.first_line - 1).at(("self_stop",), key=True)
