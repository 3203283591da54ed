"""The submission itself, once every gate passed: per planned job, the script, an intent
record, ONE scheduler call, a result record (job id, error, or an unknown outcome).

Phases are submitted in order, each after the jobs of the phases it depends on (afterok on
their ids). A failure stops the later jobs; the earlier ones stay submitted and recorded.

``Preflight`` and ``Planned`` (what submit.preflight hands over) are defined here, the module
that runs them, so submit imports dispatch and never the other way round.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import charging
from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.core import layout
from campaignops.core.errors import CampaignError, InputError
from campaignops.model import fingerprint, lockfile
from campaignops.model import ledger_writer as lw
from campaignops.model import policy as policy_mod
from campaignops.model.jobspec import JobSpec
from campaignops.runner import plan
from campaignops.runner.verdict import Verdict

JOBS_DIR = ".campaign/jobs"


@dataclass(frozen=True)
class Retry:
    """A resubmission of targets whose last attempt ran out of memory or was preempted
    (manifest oom_retry; the rule is runner/retry.py's)."""

    attempt: int  # this submission's attempt number (the first submission is 1)
    of: tuple[str, ...]  # the ledger ids of the attempts it repeats
    mem_factor: float | None = None  # a host OOM: the memory is multiplied by this
    had_mem: str | None = None  # the memory the repeated attempt had (None: as planned)


@dataclass(frozen=True)
class Submitted:
    ledger_id: str
    job_id: str | None  # None: the outcome is unknown (the call timed out)
    name: str
    targets: tuple[str, ...]


@dataclass(frozen=True)
class Planned:
    job: plan.PlannedJob
    verdicts: tuple[Verdict, ...]
    script: str


@dataclass(frozen=True)
class Preflight:
    """Everything a submission needs, read once: the plan, the gates' verdicts, the facts."""

    root: Path
    name: str  # the backend
    backend: backends.Backend
    page: Mapping[str, Any] | None  # its page, read once: each job's charge is recorded
    policy: policy_mod.Policy
    manifest: str
    stage: str
    planned: tuple[Planned, ...]
    fingerprints: dict[str, str]
    wrappers: tuple[str, ...]
    head: str | None
    unreachable: str | None


def _write_script(root: Path, script: str, text: str, log_dir: str) -> InputError | None:
    """The rendered script at ``script`` (relative to ``root``), its log directory made; on a
    full disk nothing of the job is left behind and the error says what to do."""
    path = root / script
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        (root / log_dir).mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:  # a full disk: nothing of this job is submitted or recorded
        path.unlink(missing_ok=True)
        return InputError(
            path=script,
            message=f"cannot write the job script: {exc.strerror or exc}",
            hint="free disk space (df -h .) and submit again; nothing of this job was submitted",
        )
    return None


def _intent(
    pre: Preflight,
    planned: Planned,
    spec: JobSpec,
    *,
    ledger_id: str,
    when: dt.datetime,
    page: Mapping[str, Any] | None,
    retry: Retry | None,
) -> dict[str, object]:
    """The intent record of one job, written before the scheduler is called."""
    targets = planned.job.targets
    charge = charging.job_charge(spec.resources, spec.time_s, page)
    assert pre.head is not None  # the committed gate passed
    return lw.intent_record(
        ledger_id=ledger_id,
        time=when,
        campaign=pre.policy.name,
        backend=pre.name,
        stage=pre.stage,
        targets=targets,
        fingerprint=fingerprint.submission_fingerprint(pre.fingerprints, targets),
        fingerprints={t: pre.fingerprints[t] for t in targets},
        commit=pre.head,
        name=spec.name,
        manifest=pre.manifest,
        wrappers={w: lockfile.digest((pre.root / w).read_bytes()) for w in pre.wrappers},
        array=spec.array,
        after=spec.after,
        override=next((v.override for v in planned.verdicts if v.override), None),
        charge=charge.record() if charge else None,
        stage_root=layout.stage_root(pre.stage),
        attempt=retry.attempt if retry else None,
        retry_of=list(retry.of) if retry else None,
        time_s=spec.time_s,
        # A retry's memory, raised or not: the next retry multiplies what this one had.
        resources={"mem": spec.resources.mem} if retry and spec.resources.mem else None,
    )


def _send(
    pre: Preflight,
    script: str,
    sent: Submitted,
    *,
    now: Callable[[], dt.datetime],
    call: scheduler.Runs,
) -> tuple[Submitted | None, CampaignError | None]:
    """ONE scheduler call and its result record: the job id; an error (nothing submitted); or
    an unknown outcome, recorded as such (the job may well be queued)."""
    root, be, lid = pre.root, pre.backend, sent.ledger_id

    def unknown(reason: str) -> Submitted:
        record = lw.result_record(
            ledger_id=lid, time=now(), job_id=None, outcome="unknown", reason=reason
        )
        lw.append(root, [record])
        return sent

    try:
        out = call(be.submit_argv(str(root / script)))
    except scheduler.OutcomeUnknown as exc:
        return unknown(exc.message), exc
    except CampaignError as exc:
        lw.append(
            root, [lw.result_record(ledger_id=lid, time=now(), job_id=None, error=exc.message)]
        )
        return None, exc
    try:
        job_id = be.parse_job_id(out.stdout)
    except CampaignError as exc:
        # The scheduler said yes in words we cannot read: the job may well be queued.
        return unknown(exc.message), scheduler.OutcomeUnknown(
            message=f"{exc.message}: the outcome is unknown (the job may be queued)",
            hint=scheduler.UNKNOWN_HINT,
        )
    record = lw.result_record(
        ledger_id=lid,
        time=now(),
        job_id=job_id,
        submitted=now(),
        state="PENDING",
        # Only the ssh backend says where its job runs (sshbox.placement).
        placement=getattr(be, "placement", lambda _: None)(out.stdout),
    )
    lw.append(root, [record])
    return dataclasses.replace(sent, job_id=job_id), None


def execute(
    pre: Preflight,
    *,
    now: Callable[[], dt.datetime],
    call: scheduler.Runs,
    retry: Retry | None = None,
) -> tuple[list[Submitted], CampaignError | None]:
    """Submit each planned job (gates already passed): intent, one scheduler call, result.
    Returns what was submitted, and the error that stopped a later job (earlier jobs stay
    submitted and recorded)."""
    root = pre.root
    assert pre.head is not None  # the committed gate passed
    done: list[Submitted] = []
    ids_by_group: dict[str, str] = {}
    for p in pre.planned:
        job = p.job
        lid = lw.new_ledger_id(now())
        after_ids = job.spec.after + tuple(
            ids_by_group[g] for g in job.after_groups if g in ids_by_group
        )
        spec = dataclasses.replace(job.spec, comment=f"{lid} {pre.head}", after=after_ids)
        script = f"{JOBS_DIR}/{lid}.sh"
        unwritten = _write_script(root, script, pre.backend.render(spec), spec.log_dir)
        if unwritten is not None:
            return done, unwritten
        intent = _intent(pre, p, spec, ledger_id=lid, when=now(), page=pre.page, retry=retry)
        try:
            lw.append(root, [intent])
        except InputError as exc:  # unrecorded, so not submitted: no script left behind
            (root / script).unlink(missing_ok=True)
            return done, exc
        asked = Submitted(ledger_id=lid, job_id=None, name=spec.name, targets=job.targets)
        sent, stopped = _send(pre, script, asked, now=now, call=call)
        if sent is not None:
            done.append(sent)
        if stopped is not None:
            return done, stopped
        assert sent is not None and sent.job_id is not None
        ids_by_group[job.group] = sent.job_id
    return done, None
