"""A campaign report (campaignops.learn.summary.Summary) as JSON and as Markdown.

The JSON document is ``campaignops/report/v1`` (its schema:
src/campaignops/schemas/output/report.v1.schema.json; docs/formats.md, "campaign report");
the Markdown is the experiment-queue's summary, one table per concern, which the CLI also
aligns for a terminal and ``--write`` keeps as ``reports/<manifest>-<stage>.md``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from campaignops.backends.charging import amount
from campaignops.learn.rightsizing_render import spread_json, spread_text
from campaignops.learn.summary import SCHEMA, Attempt, Group, Outcome, Summary
from campaignops.views.render import NONE, cell, duration

COUNTED = ("completed", "oom-retried", "failed", "stuck", "cancelled", "running")
WORDS = {"oom-retried": "OOM-retried then completed"}


def when(moment: dt.datetime | None) -> str | None:
    """An instant as the report writes it: UTC, to the second, ``2026-11-21T09:30:00Z``."""
    if moment is None:
        return None
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _attempt(a: Attempt) -> dict[str, Any]:
    return {
        "target": a.target,
        "attempt": a.attempt,
        "job": a.job,
        "state": a.state,
        "exit_code": a.exit_code,
        "diagnosis": a.diagnosis,
        "submitted": when(a.submitted),
        "started": when(a.started),
        "ended": when(a.ended),
        "queue_wait_s": a.queue_wait_s,
        "run_time_s": a.run_time_s,
        "cost": a.cost,
    }


def _target(t: Outcome) -> dict[str, Any]:
    return {
        "target": t.target,
        "outcome": t.outcome,
        "attempts": t.attempts,
        "stuck": t.stuck,
        "last": _attempt(t.last),
    }


def _group(g: Group) -> dict[str, Any]:
    return {
        "manifest": g.manifest,
        "phase": g.phase,
        "stage": g.stage,
        "tasks": len(g.targets),
        "counts": {name: g.count(name) for name in COUNTED},
        "submitted": when(g.submitted),
        "started": when(g.started),
        "finished": when(g.finished),
        "wall_clock_s": g.wall_clock_s,
        "queue_wait_s": spread_json(g.queue_wait),
        "run_time_s": spread_json(g.run_time),
        "cost": [{"unit": c.unit, "used": c.used, "reserved": c.reserved} for c in g.costs],
        "targets": [_target(t) for t in g.targets],
        "attempts": [_attempt(a) for a in g.attempts],
    }


def to_json(summary: Summary) -> dict[str, Any]:
    """The ``campaignops/report/v1`` document: totals, then each group."""
    return {
        "schema": SCHEMA,
        "counts": {name: summary.count(name) for name in COUNTED},
        "groups": [_group(g) for g in summary.groups],
    }


def _cost(g: Group) -> str:
    return ", ".join(amount(c.used, c.unit) for c in g.costs) or "not charged"


def counts_line(groups: Sequence[Group]) -> str:
    """``3 completed, 1 OOM-retried then completed, 0 stuck`` and the rest that occur."""
    parts = []
    for name in COUNTED:
        n = sum(g.count(name) for g in groups)
        if n or name in ("completed", "stuck"):
            parts.append(f"{n} {WORDS.get(name, name)}")
    return ", ".join(parts)


def groups_table(summary: Summary) -> str:
    head = (
        "| Manifest | Stage | Tasks | Completed | OOM-retried | Failed | Stuck | Running "
        "| Started | Finished | Wall-clock | Queue wait (median / max) | Run time (median / max) "
        "| Cost |\n" + "| --- " * 14 + "|"
    )
    rows = [
        f"| {cell(g.label)} | {g.stage} | {len(g.targets)} | {g.count('completed')} | "
        f"{g.count('oom-retried')} | {g.count('failed')} | {g.count('stuck')} | "
        f"{g.count('running')} | {when(g.started) or NONE} | {when(g.finished) or NONE} | "
        f"{duration(g.wall_clock_s)} | {spread_text(g.queue_wait)} | {spread_text(g.run_time)} | "
        f"{cell(_cost(g))} |"
        for g in summary.groups
    ]
    return "\n".join([head, *rows])


def problems_table(summary: Summary) -> str | None:
    """Failed, stuck and cancelled targets, each with its diagnosis and what it needs."""
    head = (
        "| Manifest | Stage | Target | Outcome | Attempts | Job | State | Diagnosis | Needs |\n"
        + "| --- " * 9
        + "|"
    )
    rows = [
        f"| {cell(g.label)} | {g.stage} | {cell(t.target)} | {t.outcome} | {t.attempts} | "
        f"{cell(t.last.job)} | {cell(_state(t.last))} | {cell(t.last.diagnosis)} | "
        f"{cell(t.stuck or _next(t))} |"
        for g in summary.groups
        for t in g.targets
        if t.outcome in ("failed", "stuck", "cancelled")
    ]
    return "\n".join([head, *rows]) if rows else None


def _state(a: Attempt) -> str:
    code = f" exit {a.exit_code}" if a.exit_code not in (0, None) else ""
    return f"{a.state or NONE}{code}"


def _next(t: Outcome) -> str:
    if t.outcome == "cancelled":
        return "resubmit if still wanted"
    return (
        "the diagnosis's fix, then campaign submit --failed (campaign diagnose " + t.last.job + ")"
    )


def markdown(summary: Summary, *, title: str, picture: str | None = None) -> str:
    """The summary under ``title``; ``picture`` (a relative path) embeds the SVG."""
    if not summary.groups:
        return f"# {title}\n\nNo submitted task in the ledger matches: nothing to report."
    submitted = min((g.submitted for g in summary.groups if g.submitted), default=None)
    ends = [g.finished for g in summary.groups]
    finished = None if None in ends else max(e for e in ends if e is not None)
    wall = (finished - submitted).total_seconds() if finished and submitted else None
    lines = [
        f"# {title}",
        "",
        f"- **Submitted**: {when(submitted) or NONE}",
        f"- **Finished**: {when(finished) or 'not yet'}",
        f"- **Total wall-clock**: {duration(wall)}",
        f"- **Tasks**: {counts_line(summary.groups)}",
        "",
        "## Per manifest and stage",
        "",
        groups_table(summary),
    ]
    problems = problems_table(summary)
    if problems:
        lines += ["", "## Failed and stuck", "", problems]
    if picture:
        lines += [
            "",
            "## Timeline",
            "",
            f"![Per task: queue wait and run time, failures marked; the cost over time]({picture})",
        ]
    lines += ["", 'Written from the ledger by `campaign report` (docs/runner.md, "Report").']
    return "\n".join(lines)
