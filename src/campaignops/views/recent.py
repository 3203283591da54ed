"""Which jobs a view lists: the live ones and the latest finished, newest first; the rest counted.

A campaign that runs for a year holds tens of thousands of jobs; a table of all of them is
one nobody reads, re-written after every refresh. So STATUS.md and `campaign status` list the
jobs that may still change (``Job.open``) and the last ``status.recent_jobs`` finished ones
(campaign.yaml, default 50), newest first by submission time (then by job id, read naturally),
and count the others by state; `campaign status --all`, ``--since`` and ``--stage`` list more.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from campaignops.core.errors import UsageError
from campaignops.model import ledger as ledger_mod
from campaignops.model import ledger_index
from campaignops.model.policy import DEFAULT_RECENT_JOBS


@dataclass(frozen=True)
class Selection:
    """What to list: ``every`` job, or those submitted ``since`` a time (both: no limit on the
    finished ones), else the live ones and the last ``recent`` finished; only ``stage``'s when
    given."""

    recent: int = DEFAULT_RECENT_JOBS
    every: bool = False
    since: dt.datetime | None = None
    stage: str | None = None


@dataclass(frozen=True)
class Listed:
    """The jobs listed, newest first, and how many of the others (the selection's, not listed)
    are in each state."""

    jobs: tuple[ledger_mod.Job, ...]
    left: tuple[tuple[str, int], ...] = ()

    @property
    def unlisted(self) -> int:
        return sum(n for _, n in self.left)


def state(job: ledger_mod.Job) -> str:
    """The job's state, or what the ledger says of a submission without one."""
    return job.state_shown


def select(ledger: ledger_mod.Ledger, selection: Selection) -> Listed:
    """The jobs ``selection`` asks for (see the module's docstring)."""
    pool = ledger.jobs  # in submission order
    if selection.stage is not None:
        pool = tuple(j for j in pool if j.stage == selection.stage)
    if selection.since is not None:
        since = selection.since
        pool = tuple(j for j in pool if j.sort_key()[0] >= since)
    if selection.every or selection.since is not None:
        return Listed(jobs=newest_first(pool))
    index = ledger_index.of(ledger.jobs, ledger.index)
    live = index.live
    listed = [ledger.by_id[i] for i in live if i in ledger.by_id]
    if selection.stage is not None:
        listed = [j for j in listed if j.stage == selection.stage]
    finished = 0
    for job in reversed(pool):  # newest first, until enough finished ones are found
        if finished >= selection.recent:
            break
        if job.ledger_id not in live:
            listed.append(job)
            finished += 1
    # The others, by state: the index's counts (kept with the fold) less the listed jobs.
    left: Counter[str] = Counter()
    for (stage, shown), n in index.counts.items():
        if selection.stage in (None, stage):
            left[shown] += n
    left.subtract(state(j) for j in listed)
    counts = tuple(sorted((s, n) for s, n in left.items() if n > 0))
    return Listed(jobs=newest_first(listed), left=counts)


def newest_first(jobs: Iterable[ledger_mod.Job]) -> tuple[ledger_mod.Job, ...]:
    """Newest submission first; jobs submitted in the same second by job id, read naturally."""
    return tuple(sorted(jobs, key=ledger_mod.Job.shown_key, reverse=True))


def unlisted_note(listed: Listed, *, command: str) -> str | None:
    """One line on the jobs not listed (``command``: what lists them), None when none."""
    if not listed.unlisted:
        return None
    counts = ", ".join(f"{name} {n:,}" for name, n in listed.left)
    return f"{listed.unlisted:,} earlier job(s) not listed ({counts}): {command} lists them"


def since(text: str) -> dt.datetime:
    """`campaign status --since`'s DATE: ``YYYY-MM-DD`` (midnight UTC) or an RFC 3339 time."""
    when = ledger_mod.parse_time(text.strip())
    if when is None:
        raise UsageError(
            message=f"--since {text!r} is not a date",
            hint="give a day (2026-11-21, midnight UTC) or a time (2026-11-21T10:00:00Z)",
        )
    return when
