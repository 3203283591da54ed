"""The jobs view: the jobs a selection lists (views/recent.py), newest first, the rest counted,
and the ledger lines that were skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from campaignops.core import layout
from campaignops.model import ledger as ledger_mod
from campaignops.views import recent
from campaignops.views.cells import cell, duration, empty, table
from campaignops.views.recent import state
from campaignops.views.stages import job_diagnosis

JOBS_HEADER = (
    "job",
    "targets",
    "stage",
    "backend",
    "state",
    "queue wait",
    "run time",
    "exit",
    "diagnosis",
    "commit",
)
SHOWN_TARGETS = 3


def _targets(targets: Sequence[str]) -> str:
    shown = ", ".join(targets[:SHOWN_TARGETS])
    more = len(targets) - SHOWN_TARGETS
    return f"{shown} (+{more} more)" if more > 0 else shown


def render(
    ledger: ledger_mod.Ledger,
    selection: recent.Selection,
    shown: Mapping[str, str] | None = None,
) -> str:
    """The jobs table: what ``selection`` lists (views/recent.py; default: the live jobs and
    the last status.recent_jobs finished ones), the rest counted. ``shown`` replaces the state
    of the jobs it names (by ledger id) with what they read as here (another clone's local
    job). STATUS.md passes neither: a committed view is the same in every clone."""
    instead = shown or {}
    listed = recent.select(ledger, selection)
    rows = [
        [
            cell(job.job_id),
            cell(_targets(job.targets)),
            cell(job.stage),
            cell(job.backend),
            cell(instead.get(job.ledger_id) or state(job)),
            duration(job.queue_wait()),
            duration(job.run_time()),
            cell(job.exit_code),
            cell(job_diagnosis(job)),
            cell(job.commit[:10] if job.commit else None),
        ]
        for job in listed.jobs
    ]
    text = table(JOBS_HEADER, rows or empty(JOBS_HEADER, "no jobs yet"))
    more = recent.unlisted_note(listed, command="campaign status --all")
    notes = [f"- {cell(more)}"] if more else []
    notes += [
        f"- {layout.LEDGER_FILE} line {s.line} skipped: {cell(s.reason)}"
        + (" (torn last line)" if s.last else "")
        for s in ledger.skipped
    ]
    return "\n\n".join([text, "\n".join(notes)]) if notes else text
