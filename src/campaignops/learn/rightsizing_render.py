"""A right-sizing audit (campaignops.learn.rightsizing.Audit) as JSON data and Markdown tables.

The JSON contract is in docs/formats.md ("campaign audit resources --format json"); the
Markdown tables fit a pull-request comment, and the CLI aligns the same tables for a terminal.
"""

from __future__ import annotations

from typing import Any

from campaignops.core.units import show_size
from campaignops.learn.efficiency import CPU_LOW, Efficiency, share
from campaignops.learn.rightsizing import Audit, Recommendation, Spread, StageReport
from campaignops.views.render import NONE, duration


def spread_json(spread: Spread) -> dict[str, Any]:
    """A Spread in the JSON contracts (audit resources, campaign report): median, max, count."""
    return {"median": spread.median, "max": spread.max, "count": spread.count}


def to_json(report: Audit) -> dict[str, Any]:
    """``{"recommendations": [...], "stages": [...]}``: the documented contract, nothing more."""
    return {
        "recommendations": [
            {
                "manifest": r.manifest,
                "stage": r.stage,
                "resource": r.resource,
                "current": r.current,
                "recommended": r.recommended,
                "evidence": r.evidence,
            }
            for r in report.recommendations
        ],
        "stages": [
            {
                "manifest": s.manifest,
                "stage": s.stage,
                "tasks": s.tasks,
                "queue_wait_s": spread_json(s.queue_wait),
                "run_time_s": spread_json(s.run_time),
                "failures": dict(s.failures),
            }
            for s in report.stages
        ],
        "efficiency": [_efficiency(e) for e in report.efficiency],
    }


def _efficiency(e: Efficiency) -> dict[str, Any]:
    c = e.concurrency
    return {
        "manifest": e.manifest,
        "stage": e.stage,
        "cpu_efficiency": e.cpu_efficiency,
        "cpu_tasks": e.cpu_tasks,
        "gpu_hours": e.gpu_hours,
        "throughput_per_hour": e.throughput_per_hour,
        "failure_rate": e.failure_rate,
        "concurrency": None
        if c is None
        else {"cap": c.cap, "peak": c.peak, "suggested": c.suggested, "evidence": c.evidence},
    }


def _cpu(e: Efficiency) -> str:
    if e.cpu_efficiency is None:
        return NONE
    low = " (low: ask for fewer CPUs)" if e.cpu_efficiency < CPU_LOW else ""
    return f"{share(e.cpu_efficiency)} of {e.cpu_tasks}{low}"


def _array(e: Efficiency) -> str:
    c = e.concurrency
    if c is None:
        return NONE
    now = f"%{c.cap}" if c.cap else "no %C"
    change = f"{now} → %{c.suggested}" if c.suggested else f"{now} (keep)"
    return f"{change}: {c.evidence}"


def efficiency_table(report: Audit) -> str:
    head = (
        "| Manifest | Stage | CPU efficiency (tasks) | GPU-hours | Tasks per hour | Failure rate "
        "| Array concurrency |\n| --- | --- | --- | --- | --- | --- | --- |"
    )
    rows = [
        f"| {_cell(e.manifest)} | {e.stage} | {_cpu(e)} | "
        f"{NONE if e.gpu_hours is None else f'{e.gpu_hours:g}'} | "
        f"{NONE if e.throughput_per_hour is None else f'{e.throughput_per_hour:g}'} | "
        f"{share(e.failure_rate)} | {_cell(_array(e))} |"
        for e in report.efficiency
    ]
    return "\n".join([head, *rows])


def _cell(text: str) -> str:
    # A cell holds no pipe of its own (a manifest path may) and no line break.
    return " ".join(text.split()).replace("|", "\\|")


def spread_text(spread: Spread) -> str:
    """A Spread in a table cell: ``median / max`` as durations, '—' when no task had a figure."""
    if spread.count == 0:
        return NONE
    return f"{duration(spread.median)} / {duration(spread.max)}"


def _memory(stage: StageReport) -> str:
    peak = NONE if stage.peak_kib is None else show_size(stage.peak_kib)
    return f"{peak} / {stage.mem_request or NONE}"


def _failures(stage: StageReport) -> str:
    return ", ".join(f"{k} {n}" for k, n in stage.failures.items()) or NONE


def stages_table(report: Audit) -> str:
    head = (
        "| Manifest | Stage | Tasks | Queue wait (median / max) | Run time (median / max) "
        "| Time limit | Peak RSS / mem | Failures |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    rows = [
        f"| {_cell(s.manifest)} | {s.stage} | {s.tasks} | {spread_text(s.queue_wait)} | "
        f"{spread_text(s.run_time)} | {s.time_limit or NONE} | {_memory(s)} | {_failures(s)} |"
        for s in report.stages
    ]
    return "\n".join([head, *rows])


def _change(r: Recommendation) -> str:
    if r.recommended is None:
        return f"{r.current or NONE} (keep)"
    return f"{r.current or NONE} → {r.recommended}"


def recommendations_table(report: Audit) -> str:
    head = "| Manifest | Stage | Resource | Change | Evidence |\n| --- | --- | --- | --- | --- |"
    rows = [
        f"| {_cell(r.manifest)} | {r.stage} | {r.resource} | {_change(r)} | {_cell(r.evidence)} |"
        for r in report.recommendations
    ]
    return "\n".join([head, *rows])


def markdown(report: Audit) -> str:
    """Both tables under headings, ready for a PR comment; says so when there is nothing."""
    if not report.stages:
        return "### Resource audit\n\nNo finished task in the ledger matches: nothing to audit."
    recs = (
        recommendations_table(report)
        if report.recommendations
        else "No change recommended: every request fits what its tasks used."
    )
    return (
        "### Resource audit\n\n"
        + stages_table(report)
        + ("\n\n#### Efficiency\n\n" + efficiency_table(report) if report.efficiency else "")
        + "\n\n#### Recommendations\n\n"
        + recs
        + "\n\nPeak RSS: the largest MaxRSS of a completed task. Rules: docs/runner.md, "
        '"Right-sizing".'
    )
