"""`campaign status`: refresh unfinished jobs with one batched query per backend.

For each backend in the ledger: one query call set (`query_argvs`, e.g. sacct + squeue) for all
its unfinished jobs, whatever their number. State changes are appended to the ledger as state
records; STATUS.md's views are re-rendered. An intent without a result (a crash between the two
writes) is looked up by its job name among the scheduler's jobs (the comment carries its
ledger id) and its result recorded.

`watch` repeats `refresh` until every job has finished, at least ``WATCH_MIN_S`` apart: a job
rarely changes state faster than that, and a tighter loop is the squeue/sacct hammering that
cluster admins ban (the seeds' "never a polling loop").
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from campaignops import ledger, views
from campaignops.errors import UsageError
from campaignops.runner import backends, fingerprint, scheduler
from campaignops.runner import ledger_writer as lw
from campaignops.runner.spec import FINISHED, JobState

Call = Callable[[Sequence[str]], scheduler.Call]
WATCH_MIN_S = 60.0
WATCH_MAX_S = 86400.0


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


@dataclass(frozen=True)
class Refresh:
    queries: int  # scheduler calls made
    changed: tuple[str, ...]  # ledger ids with a new state record
    reconciled: tuple[str, ...]  # ledger ids whose lost result was found


def refresh(
    *,
    root: Path,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Refresh:
    history = ledger.read(root)
    by_backend: dict[str, list[ledger.Job]] = {}
    for job in history.jobs:
        if job.text("error") or job.state in FINISHED:
            continue
        by_backend.setdefault(job.text("backend") or "local", []).append(job)
    queries = 0
    records: list[dict[str, object]] = []
    changed: list[str] = []
    reconciled: list[str] = []
    for name, jobs in sorted(by_backend.items()):
        be = backends.for_page(name, backends.page(root, name), root=root)
        lost = [j for j in jobs if not j.text("job_id")]
        if lost:
            # Find a lost submission by its comment (ledger id) among the scheduler's jobs.
            names = sorted({str(j.record.get("name") or "") for j in lost} - {""})
            out = call(be.sibling_argv(names)).stdout if names else ""
            queries += bool(names)
            found = be.parse_siblings(out, names) if names else ()
            for j in lost:
                match = next((s for s in found if s.comment and j.ledger_id in s.comment), None)
                if match is not None:
                    records.append(
                        lw.result_record(
                            ledger_id=j.ledger_id,
                            time=now(),
                            job_id=match.job_id,
                            state=match.state,
                        )
                    )
                    reconciled.append(j.ledger_id)
        ids = {j.text("job_id"): j for j in jobs if j.text("job_id")}
        if not ids:
            continue
        argvs = be.query_argvs(sorted(k for k in ids if k))
        outputs = [call(a).stdout for a in argvs]
        queries += len(argvs)
        states: dict[str, JobState] = be.parse_states(outputs)
        for job_id, job in ids.items():
            state = states.get(job_id or "")
            if state is None or (
                state.state == job.state and state.exit_code == job.record.get("exit_code")
            ):
                continue
            signature = (
                fingerprint.failure_signature(state.state, state.exit_code, None, None)
                if state.state in FINISHED and state.state != "COMPLETED"
                else None
            )
            records.append(
                lw.state_record(
                    ledger_id=job.ledger_id, time=now(), state=state, signature=signature
                )
            )
            changed.append(job.ledger_id)
    if records:
        lw.append(root, records)
    views.render_all(root=root, write=True)
    return Refresh(queries=queries, changed=tuple(changed), reconciled=tuple(reconciled))


def unfinished(root: Path) -> int:
    """How many recorded jobs may still change state (submitted, not finished, not failed)."""
    return sum(1 for j in ledger.read(root).jobs if not j.text("error") and j.state not in FINISHED)


def watch(
    *,
    root: Path,
    report: Callable[[Refresh, int], None],
    interval: float = WATCH_MIN_S,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
    sleep: Callable[[float], None] | None = None,
) -> Refresh:
    """Refresh, report (the refresh and the jobs still unfinished), wait ``interval``; until no
    job is unfinished. Returns the last refresh."""
    if not WATCH_MIN_S <= interval <= WATCH_MAX_S:
        raise UsageError(
            message=f"--interval {interval:g} is outside {WATCH_MIN_S:g}-{WATCH_MAX_S:g} s",
            hint=f"watch at most once a minute (--interval {WATCH_MIN_S:g} or more): each round "
            "queries the scheduler",
        )
    pause = sleep or _sleep
    while True:
        done = refresh(root=root, now=now, call=call)
        left = unfinished(root)
        report(done, left)
        if not left:
            return done
        pause(interval)
