"""STALE checks: verified stamps: age, parseable dates, backend pages without a stamp.

Stamps are read from Markdown (front matter as YAML, the body as prose), backend pages, and the
failure catalog (as YAML). The grammar lives in campaignops.model.stamps; here only policy is applied.

With ``--base REF`` (commit and push time) only files the change touches are judged: a stamp
ages with the calendar, not with the change, so a commit must not fail for facts it never
touched. Those are the scheduled audit's (campaign audit, campaignops.gitops.upkeep.run).
"""

from __future__ import annotations

from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import layout
from campaignops.model.stamps import Stamp, age_in_months, find_stamps, is_future, markdown_stamps

FAMILY = "STALE"
SUMMARY = "verified stamps: age, parseable dates, backend pages without a stamp"
CODES = code_table(
    Code(
        id="STALE001",
        message="stamp {stamp!r} is {age} months old (policy allows {limit})",
        hint="re-check the fact against {source}, then update the stamp to {month}",
    ),
    Code(
        id="STALE002",
        message="stamp {stamp!r} has no parseable date",
        hint="write {form}",
    ),
    Code(
        id="STALE003",
        message="backend page has no verified stamp",
        hint="add verified: YYYY-MM to the front matter, and stamp each fact with its source",
    ),
    Code(
        id="STALE004",
        message="stamp {stamp!r} is dated in the future (today is {today})",
        hint="stamp the month you actually verified the fact",
    ),
)

KEY_FORM = "verified: YYYY-MM (or YYYY-MM-DD), the month you checked the facts"
PROSE_FORM = "verified YYYY-MM, verified <source> YYYY-MM or verified Mon YYYY (e.g. verified slurm.schedmd.com/sbatch.html 2026-06)"


def _judge(rel: str, stamp: Stamp, ctx: CheckContext) -> Finding | None:
    if stamp.date is None:
        form = KEY_FORM if stamp.key_line else PROSE_FORM
        return CODES["STALE002"].at(rel, stamp.line, stamp.col, stamp=stamp.raw, form=form)
    if is_future(stamp, ctx.today):
        return CODES["STALE004"].at(
            rel, stamp.line, stamp.col, stamp=stamp.raw, today=ctx.today.isoformat()
        )
    age = age_in_months(stamp.date, ctx.today)
    limit = ctx.policy.stale_after_months
    if age > limit:
        return CODES["STALE001"].at(
            rel,
            stamp.line,
            stamp.col,
            stamp=stamp.raw,
            age=age,
            limit=limit,
            source=stamp.source or "its source",
            month=f"{ctx.today:%Y-%m}",
        )
    return None


def _is_backend_template(rel: str, ctx: CheckContext) -> bool:
    """The page users copy to add a backend holds placeholders such as ``verified: YYYY-MM``."""
    return rel.rsplit("/", 1)[-1] == layout.BACKEND_TEMPLATE and layout.matches(
        rel, ctx.policy.globs.get(layout.BACKEND, ())
    )


def stamped_files(
    ctx: CheckContext, *, touched_only: bool = False
) -> Iterator[tuple[str, str, list[Stamp]]]:
    """``(path, text, stamps)`` of every readable file that holds stamps (Markdown, backend
    pages, the failure catalog), the backend template excepted; unreadable ones are skipped
    (the reader records why). ``touched_only``: only files ``ctx.is_touched``."""
    catalogs = set(ctx.of(layout.FAILURES))
    paths = dict.fromkeys((*ctx.of(layout.MARKDOWN), *ctx.of(layout.BACKEND), *catalogs))
    for rel in paths:
        if _is_backend_template(rel, ctx) or (touched_only and not ctx.is_touched(rel)):
            continue
        text = ctx.reader.read_text(rel)
        if text is None:
            continue
        stamps = find_stamps(text, yaml_like=True) if rel in catalogs else markdown_stamps(text)
        yield rel, text, stamps


def check(ctx: CheckContext) -> Iterator[Finding]:
    """Age every stamp against ``ctx.today``; require one well-formed stamp per backend page.
    With ``ctx.base``, only in the files the change touches."""
    backends = set(ctx.of(layout.BACKEND))
    for rel, _, stamps in stamped_files(ctx, touched_only=True):
        for stamp in stamps:
            finding = _judge(rel, stamp, ctx)
            if finding is not None:
                yield finding
        if rel in backends and not any(s.date is not None for s in stamps):
            yield CODES["STALE003"].at(rel, 1, 1)
