"""LESSON checks: LESSONS.md lines in the lesson format, with known entries and real dates.

Only the lines under a ``## Lessons`` heading are lessons (the prose above them is free). The
format and its reading are campaignops.model.lessons'; here each line is judged. Entry ids are
compared with every failure catalog of the campaign, read from the root whatever paths were
passed; when a passed path is a catalog (a pre-commit run that only touched failures.yaml, e.g.
an entry renamed), LESSONS.md is checked too, since that is where the dangling id lives.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from campaignops.checks.context import CheckContext
from campaignops.checks.finding import Code, Finding, code_table
from campaignops.core import layout
from campaignops.model import lessons

FAMILY = "LESSON"
SUMMARY = "LESSONS.md lines: the lesson format, known failures.yaml ids, real dates"
CODES = code_table(
    Code(
        id="LESSON001",
        message="not a lesson line: {problem}",
        hint="under '## Lessons' every line is '{form}' (campaign lesson add writes it)",
    ),
    Code(
        id="LESSON002",
        message="entry {entry!r} is neither 'new' nor an id in failures.yaml",
        hint="{guess}write an id of failures.yaml (FAILURES.md lists them), or new and add "
        "the failure to failures.yaml",
    ),
    Code(
        id="LESSON003",
        message="date {date} {problem}",
        hint="write the day of the fix as YYYY-MM-DD (one day ahead of today passes: the "
        "lesson may come from a later time zone)",
    ),
)


# `lesson add` dates a lesson by the writer's local day; a check elsewhere (CI in UTC) may
# still be on the day before, by at most one calendar day against UTC.
TIME_ZONE_SLACK = dt.timedelta(days=1)


def _files(ctx: CheckContext) -> tuple[str, ...]:
    chosen = ctx.of(layout.LESSONS)
    if ctx.explicit and ctx.of(layout.FAILURES):
        chosen = tuple(dict.fromkeys((*chosen, *ctx.all_of(layout.LESSONS))))
    return chosen


def _known(ctx: CheckContext) -> tuple[str, ...] | None:
    """Every catalog's ids; None when a catalog cannot be read (POLICY reports it)."""
    ids: list[str] = []
    for rel in ctx.all_of(layout.FAILURES):
        parsed = ctx.reader.read_yaml(rel)
        if parsed is None or parsed[1] is not None:
            return None
        ids.extend(lessons.catalog_ids(parsed[0]))
    return tuple(dict.fromkeys(ids))


def check(ctx: CheckContext) -> Iterator[Finding]:
    files = _files(ctx)
    if not files:
        return
    known = _known(ctx) if ctx.wants("LESSON002") else ()
    for rel in files:
        text = ctx.reader.read_text(rel)
        if text is None:
            continue
        for item in lessons.scan(text):
            if isinstance(item, lessons.Malformed):
                yield CODES["LESSON001"].at(
                    rel, item.line, item.col, problem=item.problem, form=lessons.FORMAT
                )
                continue
            day = item.day()
            if day is None:
                yield CODES["LESSON003"].at(
                    rel, item.line, item.date_col, date=item.date, problem="is not a calendar date"
                )
            elif day > ctx.today + TIME_ZONE_SLACK:
                yield CODES["LESSON003"].at(
                    rel,
                    item.line,
                    item.date_col,
                    date=item.date,
                    problem=f"is in the future (today is {ctx.today.isoformat()})",
                )
            if known is not None and item.entry != lessons.NEW and item.entry not in known:
                yield CODES["LESSON002"].at(
                    rel,
                    item.line,
                    item.entry_col,
                    entry=item.entry,
                    guess=lessons.close_ids(item.entry, known),
                )
