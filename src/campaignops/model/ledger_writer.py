"""Writing the ledger (.campaign/ledger.jsonl): schema-valid records, appended whole.

A submission appends an intent record before the scheduler call and a result record after it;
``campaign status`` appends state records. Reading and folding them is campaignops.model.ledger's job;
this module only builds records and appends them through campaignops.core.journal (exclusive flock,
one write, fsync), so a torn last line left by a crash never merges with the next record.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.core import journal, layout, schema
from campaignops.core.errors import CampaignError
from campaignops.model.jobspec import JobState
from campaignops.model.ledger import parse_time

VERSION = 1
# 48 random bits after the second: two submissions in the same second collide with odds of
# about one in 2**48, and no coordination between submitting processes is needed.
_RANDOM_BYTES = 6


class InvalidRecord(CampaignError):
    """The runner built a record the ledger schema refuses: a bug, and nothing was written."""

    exit_code = 2


def format_time(when: dt.datetime) -> str:
    """RFC 3339 in UTC to the second (``2026-11-21T10:00:00Z``); naive datetimes are refused:
    a local wall-clock time without its zone would be misread as UTC by every reader."""
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"naive datetime {when!r}: pass an aware one (datetime.now(timezone.utc))")
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_ledger_id(now: dt.datetime) -> str:
    """``L<UTC yyyymmddThhmmss>Z-<12 hex>``: sorts by time, unique without coordination."""
    stamp = format_time(now).replace("-", "").replace(":", "")
    return f"L{stamp}-{secrets.token_hex(_RANDOM_BYTES)}"


def _record(kind: str, ledger_id: str, time: dt.datetime, **fields: Any) -> dict[str, Any]:
    # Nulls are left out: the reader's fold ignores them anyway, and the lines stay short.
    head = {"v": VERSION, "kind": kind, "ledger_id": ledger_id, "time": format_time(time)}
    return head | {k: v for k, v in fields.items() if v is not None}


def _time(value: str | dt.datetime | None) -> str | None:
    """A timestamp as the schema wants it, or None when it cannot be read (never a bad value)."""
    when = value if isinstance(value, dt.datetime) else parse_time(value)
    return format_time(when) if when is not None and when.tzinfo is not None else None


def intent_record(
    *,
    ledger_id: str,
    time: dt.datetime,
    campaign: str,
    backend: str,
    stage: str,
    targets: Sequence[str],
    fingerprint: str,
    commit: str,
    manifest: str,
    name: str | None = None,
    wrappers: Mapping[str, str] | None = None,
    array: str | None = None,
    after: Sequence[str] = (),
    override: str | None = None,
    fingerprints: Mapping[str, str] | None = None,
    stage_root: str | None = None,
    charge: Mapping[str, Any] | None = None,
    attempt: int | None = None,
    retry_of: Sequence[str] | None = None,
    time_s: int | None = None,
    resources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Written before the scheduler call: what is about to be submitted, from which commit.
    ``fingerprints`` (several targets) keeps each target's own, so a smoke counts per target;
    ``time_s``, each task's time limit, lets the audit tell a job the ledger lost track of."""
    return _record(
        "intent",
        ledger_id,
        time,
        campaign=campaign,
        backend=backend,
        stage=stage,
        targets=list(targets),
        fingerprint=fingerprint,
        commit=commit,
        manifest=manifest,
        name=name,
        wrappers=dict(wrappers) if wrappers else None,
        array=array,
        after=list(after) or None,
        override=override,
        fingerprints=dict(fingerprints) if fingerprints and len(targets) > 1 else None,
        stage_root=stage_root,
        attempt=attempt,
        retry_of=list(retry_of) if retry_of else None,
        charge=dict(charge) if charge else None,
        time_s=time_s,
        resources=dict(resources) if resources else None,
    )


def result_record(
    *,
    ledger_id: str,
    time: dt.datetime,
    job_id: str | None,
    submitted: dt.datetime | None = None,
    state: str | None = None,
    error: str | None = None,
    outcome: str | None = None,
    reason: str | None = None,
    placement: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Written after the scheduler call: the job id (state PENDING), the error that refused
    the submission (no job id, no state), or ``outcome="unknown"`` with the reason when the
    call timed out or its answer could not be read (the job may be queued). ``placement``:
    where an ssh job runs (instance, commit, remote directory, executor pid per instance)."""
    return _record(
        "result",
        ledger_id,
        time,
        job_id=job_id,
        submitted=_time(submitted),
        state=state,
        error=error,
        outcome=outcome,
        reason=reason,
        placement=placement,
    )


def task_fields(
    state: JobState, *, signature: str | None = None, reason: str | None = None
) -> dict[str, Any]:
    """One array task's entry in a state record's ``tasks`` (nulls left out)."""
    run_time = state.elapsed_s if state.elapsed_s is not None and state.elapsed_s >= 0 else None
    fields = {
        "state": state.state,
        "exit_code": state.exit_code,
        "reason": reason or state.reason,
        "signature": signature,
        "started": _time(state.started),
        "ended": _time(state.ended),
        "run_time_s": run_time,
        "max_rss": state.max_rss,
        "req_mem": state.req_mem,
        **usage(state),
    }
    return {k: v for k, v in fields.items() if v is not None}


def usage(state: JobState) -> dict[str, Any]:
    """What the accounting measured beyond memory (sacct: TotalCPU, AllocCPUS, AllocTRES)."""
    return {
        "cpu_time_s": state.cpu_time_s,
        "alloc_cpus": state.alloc_cpus,
        "alloc_gpus": state.alloc_gpus,
    }


def state_record(
    *,
    ledger_id: str,
    time: dt.datetime,
    state: JobState,
    signature: str | None = None,
    diagnosis: Mapping[str, str | None] | None = None,
    tasks: Mapping[int, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A status refresh: what the scheduler says of the job now, and of each array task that
    changed (``tasks``: index → task_fields). The job id is repeated so an intent whose result
    was lost (found again by name or comment) gets it here."""
    run_time = state.elapsed_s if state.elapsed_s is not None and state.elapsed_s >= 0 else None
    return _record(
        "state",
        ledger_id,
        time,
        job_id=state.job_id,
        state=state.state,
        exit_code=state.exit_code,
        submitted=_time(state.submitted),
        started=_time(state.started),
        ended=_time(state.ended),
        run_time_s=run_time,
        signature=signature,
        diagnosis=dict(diagnosis) if diagnosis else None,
        reason=state.reason,
        max_rss=state.max_rss,
        req_mem=state.req_mem,
        **usage(state),
        tasks={str(i): dict(f) for i, f in sorted(tasks.items())} if tasks else None,
    )


def cancel_record(
    *,
    ledger_id: str,
    time: dt.datetime,
    job_id: str,
    cancel_ids: Sequence[str],
    targets: Sequence[str],
    by: str,
    reason: str | None = None,
) -> dict[str, Any]:
    """Written after the backend accepted a cancel: which targets (the whole job's, or those of
    ``--targets``), through which ids, by whom and why. Its own keys (``cancel_*``), since the
    fold by ledger id must not overwrite the job's ``targets``; the state itself comes from
    the next status refresh."""
    return _record(
        "cancel",
        ledger_id,
        time,
        job_id=job_id,
        cancel_ids=list(cancel_ids),
        cancel_targets=list(targets),
        cancel_by=by,
        cancel_reason=reason,
    )


def encode(record: Mapping[str, Any]) -> str:
    """One ledger line; raises InvalidRecord when the record breaks the schema."""
    problems = [e.message for e in schema.validate(schema.LEDGER_RECORD, record)]
    if problems:
        raise InvalidRecord(
            message=f"ledger record {record.get('ledger_id')!r} is invalid: {'; '.join(problems)}",
            hint="this is a campaignops bug: please report it with the command you ran",
        )
    try:
        return json.dumps(record, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    except ValueError:  # NaN or infinity: the schema's number type lets them through
        raise InvalidRecord(
            message=f"ledger record {record.get('ledger_id')!r} holds a NaN or infinite number",
            hint="this is a campaignops bug: please report it with the command you ran",
        ) from None


def check_writable(root: Path) -> None:
    """InputError (exit 2) unless the ledger can be appended to: a submission asks before it
    writes a script or calls the scheduler, so a job is never started unrecorded."""
    journal.check_appendable(root / layout.LEDGER_FILE)


def append(root: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append ``records`` to the campaign's ledger in one locked, fsynced write. Every record is
    validated first: one invalid record and nothing is written."""
    lines = [encode(record) for record in records]
    journal.append_lines(root / layout.LEDGER_FILE, lines)


def pull_record(
    *, ledger_id: str, time: dt.datetime, verdicts: Mapping[int, str]
) -> dict[str, Any]:
    """campaign pull's verdict on each cell it looked at (``verdicts``: task index → verdict),
    merged task by task into the job like a state record's tasks."""
    stamp = format_time(time)
    return _record(
        "pull",
        ledger_id,
        time,
        tasks={str(i): {"pulled": v, "pulled_at": stamp} for i, v in sorted(verdicts.items())},
    )


def release_record(
    *,
    ledger_id: str,
    time: dt.datetime,
    instance: str,
    indices: Sequence[int],
    command: str | None,
    ran: bool,
    exit_code: int | None = None,
) -> dict[str, Any]:
    """campaign release let go of ``instance``: its stop or destroy command, whether it ran (and
    how it ended), and each of this job's tasks on it marked ``released``."""
    stamp = format_time(time)
    return _record(
        "release",
        ledger_id,
        time,
        release_instance=instance,
        release_at=stamp,
        release_command=command,
        release_ran=ran,
        release_exit=exit_code,
        tasks={str(i): {"released": stamp} for i in sorted(indices)},
    )
