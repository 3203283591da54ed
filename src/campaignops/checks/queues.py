"""QUEUE checks: queue files: line format, config paths, unique cells, append-only."""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import gitrefs, layout
from campaignops.model import queuefile, queueparts
from campaignops.model.makeup import config_problem as config_problem  # re-exported

FAMILY = "QUEUE"
SUMMARY = "queue files: line format, config paths, unique cells, append-only"
CODES = code_table(
    Code(
        id="QUEUE001",
        message="malformed queue line: {problem}",
        hint="write '<cfg_path> <task> [epochs]', fields separated by spaces; '#' starts a comment only at the start of a line",
    ),
    Code(
        id="QUEUE002",
        message="config {cfg!r} {problem}",
        hint="commit the config inside the campaign, or fix the path (relative to the campaign root)",
    ),
    Code(
        id="QUEUE003",
        message="cell name {name!r} is also used at {other} ({other_cfg})",
        hint="two cells must never share a name (it keys their output directory and log): rename one config; to re-run a cell from another queue, comment its earlier line out",
    ),
    Code(
        id="QUEUE004",
        message="{change} since {base}; a queue file in flight is append-only",
        hint="restore it (git checkout {base} -- {file}); add cells by appending lines, drop a cell by commenting its line out in place",
    ),
)


def _format_and_configs(
    ctx: CheckContext, parsed: dict[str, queuefile.QueueFile]
) -> Iterator[Finding]:
    for rel in ctx.of(layout.QUEUE):
        queue = parsed.get(rel)
        if queue is None:
            continue
        for problem in queue.problems:
            yield CODES["QUEUE001"].at(rel, problem.line, problem.col, problem=problem.message)
        for cell in queue.cells:
            why = config_problem(ctx.reader, cell.cfg)
            if why is not None:
                yield CODES["QUEUE002"].at(rel, cell.line, 1, cfg=cell.cfg, problem=why)


def _duplicates(
    ctx: CheckContext,
    parsed: dict[str, queuefile.QueueFile],
    copies: frozenset[tuple[str, int]] = frozenset(),
) -> Iterator[Finding]:
    """Each later use of a name is reported against the first (in path, line order). When only
    the first is among the files checked (a pre-commit run given a new queue that sorts first),
    it is reported against the second, so the collision is caught whichever file was passed."""
    checked = set(ctx.of(layout.QUEUE))
    uses: dict[str, list[tuple[str, queuefile.Cell]]] = {}
    for rel in sorted(parsed):
        for cell in parsed[rel].cells:
            if (rel, cell.line) not in copies:  # a split part's copy of its queue's cell
                uses.setdefault(cell.name, []).append((rel, cell))
    for name, where in uses.items():
        if len(where) < 2:
            continue
        for index, (rel, cell) in enumerate(where):
            if rel not in checked:
                continue
            if index == 0 and any(r in checked for r, _ in where[1:]):
                continue
            other_rel, other = where[1] if index == 0 else where[0]
            yield CODES["QUEUE003"].at(
                rel,
                cell.line,
                1,
                name=name,
                other=f"{other_rel}:{other.line}",
                other_cfg=other.cfg,
            )


def _base_text(ctx: CheckContext, base: str, rel: str) -> str | None:
    data = gitrefs.show(ctx.root, ref=base, rel=rel)
    if data is None:
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _append_only(ctx: CheckContext, base: str) -> Iterator[Finding]:
    for rel, text in ctx.texts(layout.QUEUE):
        old = _base_text(ctx, base, rel)
        if old is None:
            continue
        edit = queuefile.first_edit(old, text)
        if edit is not None:
            yield CODES["QUEUE004"].at(rel, edit.line, 1, change=edit.change, base=base, file=rel)
    # Pre-commit passes only existing files, so a deleted queue is found in runs without PATHs
    # (as CI runs); a run with PATHs reports only the files it was given.
    if ctx.explicit:
        return
    for rel in gitrefs.list_files(ctx.root, ref=base):
        if layout.QUEUE in layout.kinds_of(rel, ctx.policy.globs) and not ctx.reader.exists(rel):
            yield CODES["QUEUE004"].at(
                rel, 1, 1, change="queue file was deleted", base=base, file=rel
            )


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Line format and config paths of the files checked; cell names across every queue file
    (so a pre-commit run given one file still sees the others); with ``ctx.base``, append-only."""
    parsed: dict[str, queuefile.QueueFile] = {}
    sources: dict[str, str | None] = {}
    for rel in dict.fromkeys((*ctx.of(layout.QUEUE), *ctx.all_of(layout.QUEUE))):
        text = ctx.reader.read_text(rel)
        if text is not None:
            parsed[rel] = queuefile.parse(text)
            sources[rel] = queueparts.part_source(text)
    yield from _format_and_configs(ctx, parsed)
    yield from _duplicates(ctx, parsed, queueparts.copies(parsed, sources))
    if ctx.base is not None:
        yield from _append_only(ctx, ctx.base)
