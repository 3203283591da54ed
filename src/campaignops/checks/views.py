"""VIEW checks: generated Markdown blocks in sync with their sources.

A block is compared with what ``campaign render`` would write now, byte for byte, so this check
and ``campaign render --check`` always agree. Sources are read from the campaign root whatever
paths were passed; when a passed path is itself a source (a pre-commit run that only touched
failures.yaml), every Markdown file is examined, since that is where the stale block lives.
"""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import layout
from campaignops.core.errors import InputError
from campaignops.model import blocks
from campaignops.views import render as views
from campaignops.views.stages import OLDER_CONFIG

FAMILY = "VIEW"
SUMMARY = "generated Markdown blocks in sync with their sources"
CODES = code_table(
    Code(
        id="VIEW001",
        message="view {name!r} is out of sync with {source}",
        hint="run campaign render (also after a merge: git joins both sides' rows, and only "
        "campaign render rebuilds the block); the block is generated from {source}, so edits "
        "inside it are lost",
    ),
    Code(
        id="VIEW002",
        message="{problem}",
        hint="view blocks are '<!-- campaign:begin NAME -->' ... '<!-- campaign:end NAME -->', "
        "each marker alone on its line, not nested; NAME is one of {names}",
    ),
    Code(
        id="VIEW003",
        message="view {name!r} cannot be rendered: {problem}",
        hint="fix {source}, then run campaign render",
    ),
)

# Kinds of file a view is rendered from: the stages view reads what each smoked target is made
# of (a manifest, its queue file, the configs and scripts its command names: model/makeup.py).
SOURCE_KINDS = (
    layout.POLICY,
    layout.BACKEND,
    layout.FAILURES,
    layout.LEDGER,
    layout.MANIFEST,
    layout.QUEUE,
    layout.SCRIPT,
    layout.WRAPPER,
    layout.YAML,
)


def _markdown(ctx: CheckContext) -> tuple[str, ...]:
    chosen = ctx.of(layout.MARKDOWN)
    if ctx.explicit and any(ctx.of(kind) for kind in SOURCE_KINDS):
        chosen = tuple(dict.fromkeys((*chosen, *ctx.all_of(layout.MARKDOWN))))
    return chosen


def _in_sync(text: str, block: blocks.Block, body: str) -> bool:
    """The block as render would write it now, but for the stages view's "(older config)": that
    mark follows the working tree's manifests and configs, not the ledger, and every render and
    refresh rewrites it. A fix commit that edits a smoked target's manifest is not thereby out of
    sync (it would fail check, and the campaign's CI, until campaign render)."""
    if blocks.in_sync(text, block, body):
        return True
    kept = text[block.start : block.stop].replace(OLDER_CONFIG, "")
    return kept == blocks.content(body, block.eol).replace(OLDER_CONFIG, "")


def check(ctx: CheckContext) -> Iterator[Finding]:
    sources = views.Sources(ctx.reader)
    names = ", ".join(views.VIEWS)
    for rel in _markdown(ctx):
        text = ctx.reader.read_text(rel)
        if text is None or "campaign:" not in text:
            continue
        parsed = views.parse(text)
        for defect in parsed.defects:
            yield CODES["VIEW002"].at(
                rel, defect.line, defect.col, problem=defect.problem, names=names
            )
        for block in parsed.blocks:
            view = views.VIEWS[block.name]
            try:
                body = sources.render(block.name)
            except InputError as exc:
                yield CODES["VIEW003"].at(
                    rel,
                    block.begin,
                    block.col,
                    name=block.name,
                    problem=exc.message,
                    source=exc.path,
                )
                continue
            if not _in_sync(text, block, body):
                yield CODES["VIEW001"].at(
                    rel, block.begin, block.col, name=block.name, source=view.source
                )
