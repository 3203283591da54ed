"""``campaign diagnose``: find a recorded task, read its log's tail and its verdict, decide.

A task is named as its backend names it: ``4242`` (a single job), ``4242_3`` (Slurm and local
array tasks), ``4242[3].server`` (PBS subjobs), or by ledger id. Its log path is the one the
submitted script asked for (the backend module's ``log_path``), its verdict what the last
``campaign status --refresh`` recorded.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import registry as backends
from campaignops.core import safetext
from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.learn.diagnosis import logtext
from campaignops.learn.diagnosis.engine import Diagnosis, diagnose
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model import catalog as catalog_mod
from campaignops.model import jobref, ledger, lessons


@dataclass(frozen=True)
class Subject:
    """What was diagnosed: a recorded task, or a log file given by path."""

    ref: str  # as the user named it (the task id for a recorded task)
    log: str | None  # the log's path (relative to the campaign for a recorded task)
    log_read: bool  # False: the log does not exist (yet) or cannot be read
    backend: str | None = None
    kind: str | None = None
    ledger_id: str | None = None
    target: str | None = None
    stage: str | None = None
    # The attempts its box executor ran again within the job (ledger ``tries``), oldest first:
    # each as status --refresh recorded it.
    tries: tuple[ledger.Task, ...] = ()


@dataclass(frozen=True)
class Report:
    subject: Subject
    diagnosis: Diagnosis
    # The line `campaign lesson add` would append, and that command, ready to paste; None for a
    # task that completed (exit 0): nothing failed, so there is no lesson to offer.
    lesson: str | None
    lesson_command: str | None

    @property
    def completed(self) -> bool:
        """The scheduler says the task COMPLETED with exit 0: no failure to explain."""
        evidence = self.diagnosis.evidence
        return evidence.state == "COMPLETED" and not evidence.failed


def _task_ids(job: ledger.Job, be: backends.Backend) -> list[str]:
    assert job.job_id is not None
    if len(job.targets) <= 1:
        return [job.job_id]
    return [be.task_id(job.job_id, i) for i in range(len(job.targets))]


def backend_kind(root: Path, name: str) -> str | None:
    """The kind on the backend's page (slurm, pbs, local …), None when it cannot be read."""
    try:
        page = backends.page(root, name)
    except (CampaignError, OSError, UnicodeDecodeError):
        return None
    kind = page.get("kind") if page else None
    return kind if isinstance(kind, str) else None


def _read(path: Path) -> str | None:
    try:
        return logtext.tail(path)
    except (OSError, ValueError):
        return None


def read_inside(root: Path, rel: str) -> str | None:
    """The tail of ``rel`` when it resolves inside the campaign, else None."""
    path = (root / rel).resolve()
    if not path.is_relative_to(root.resolve()):
        return None
    return _read(path)


def of_job(
    *, root: Path, ref: str, catalog: catalog_mod.Catalog, today: dt.date | None = None
) -> Report:
    """Diagnose the recorded task ``ref``."""
    job, index = jobref.resolve(ledger.read(root), ref, readings=backends.task_refs)
    return _of_task(root=root, job=job, index=index, catalog=catalog, today=today)


def of_target(
    *,
    root: Path,
    target: str,
    stage: str | None,
    catalog: catalog_mod.Catalog,
    today: dt.date | None = None,
) -> Report:
    """Diagnose the task of ``target`` in the last job that ran it (at ``stage`` when given)."""
    job, index = jobref.of_target(ledger.read(root), target, stage)
    return _of_task(root=root, job=job, index=index, catalog=catalog, today=today)


def _of_task(
    *,
    root: Path,
    job: ledger.Job,
    index: int | None,
    catalog: catalog_mod.Catalog,
    today: dt.date | None,
) -> Report:
    if job.job_id is None:
        raise UsageError(
            message=f"ledger {job.ledger_id} holds no submitted job "
            f"({job.error or 'no job id recorded'})",
            hint="nothing ran, so there is no log: campaign status --refresh finds a lost job id",
        )
    name = job.backend or "local"
    kind = backend_kind(root, name)
    be = backends.for_page(name, backends.page(root, name), root=root)
    ids = _task_ids(job, be)
    if index is None and len(job.targets) > 1:
        failed = [
            f"{ids[i]} ({t})"
            for i, t in enumerate(job.targets)
            if (task := job.task(t)) is not None and task.finished and not task.succeeded
        ]
        raise UsageError(
            message=f"job {job.job_id} is an array of {len(job.targets)} tasks: name one",
            hint=(f"failed: {', '.join(failed)}" if failed else f"e.g. {ids[0]}")
            + " (campaign status shows each target's outcome)",
        )
    target = job.targets[index or 0] if job.targets else None
    task = job.task(target) if target is not None else None
    evidence = Evidence(
        state=task.state if task else job.state,
        exit_code=task.exit_code if task else job.exit_code,
        reason=task.reason if task else job.text("reason"),
    )
    array = len(job.targets) > 1
    rel = be.log_path(job.job_id, name=job.text("name") or "", index=index if array else None)
    text = read_inside(root, rel)
    found = diagnose(text or "", catalog=catalog, evidence=evidence, backend=name, kind=kind)
    subject = Subject(
        ref=ids[index or 0],
        log=rel,
        log_read=text is not None,
        backend=name,
        kind=kind,
        ledger_id=job.ledger_id,
        target=target,
        stage=job.stage,
        tries=task.tries if task else (),
    )
    return _report(subject, found, today=today)


def of_log(
    *,
    log: Path,
    shown: str,
    catalog: catalog_mod.Catalog,
    evidence: Evidence,
    backend: str | None = None,
    kind: str | None = None,
    today: dt.date | None = None,
) -> Report:
    """Diagnose a log file given by path (``shown`` is how to print it)."""
    if not log.is_file():
        raise InputError(path=shown, message="no such log file", hint="pass a task's log file")
    text = _read(log)
    if text is None:
        raise InputError(path=shown, message="cannot read the log", hint="check its permissions")
    found = diagnose(text, catalog=catalog, evidence=evidence, backend=backend, kind=kind)
    subject = Subject(ref=shown, log=shown, log_read=True, backend=backend, kind=kind)
    return _report(subject, found, today=today)


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.;])\s", text.strip(), maxsplit=1)[0].rstrip(".;")


def _report(subject: Subject, found: Diagnosis, *, today: dt.date | None) -> Report:
    """The lesson line ``campaign lesson add`` would append, and that command: what failed
    (the entry's title, or the unknown failure's signature), the catalog's fix as a first
    guess at what fixed it (edit it to what you did), the task, the entry or ``new``; none for
    a task that completed."""
    if found.evidence.state == "COMPLETED" and not found.evidence.failed:
        return Report(subject=subject, diagnosis=found, lesson=None, lesson_command=None)
    entry = found.entry
    if entry is not None:
        failed = lessons.sanitize(_first_sentence(entry.title or entry.symptom), limit=100)
        fixed = lessons.sanitize(_first_sentence(entry.fix), limit=100)
    else:
        shown = found.last_error.text if found.last_error is not None else found.signature
        failed = lessons.sanitize(f"unexplained failure: {shown}", limit=100)
        fixed = "WHAT FIXED IT"
    entry_id = entry.id if entry is not None else lessons.NEW
    job = subject.ref if subject.ledger_id else None
    day = today or dt.datetime.now(dt.timezone.utc).date()
    line = lessons.make(day=day, failed=failed, fixed=fixed, entry=entry_id, job=job).render()
    command = lessons.command(failed=failed, fixed=fixed, job=job, entry=entry_id)
    return Report(subject=subject, diagnosis=found, lesson=line, lesson_command=command)


def as_json(report: Report) -> dict[str, Any]:
    """The JSON contract: category, entry, matches, lesson; then what the text view shows."""
    found = report.diagnosis
    entry = found.entry
    return {
        "completed": report.completed,
        "category": found.category,
        "entry": found.entry_id,
        "matches": [
            {"entry": m.entry.id, "category": m.entry.category, "line": m.line, "text": m.text}
            for m in found.matches
        ],
        "lesson": report.lesson,
        "lesson_command": report.lesson_command,
        "task": report.subject.ref,
        "log": report.subject.log,
        "log_read": report.subject.log_read,
        "verdict": {
            "state": found.evidence.state,
            "exit_code": found.evidence.exit_code,
            "reason": found.evidence.reason,
        },
        "signature": found.signature,
        "tries": [
            {
                "attempt": t.attempt,
                "state": t.state,
                "exit_code": t.exit_code,
                "reason": t.reason,
                "diagnosis": {"entry": t.entry, "category": t.category},
            }
            for t in report.subject.tries
        ],
        "last_error": (
            {"line": found.last_error.number, "text": found.last_error.text}
            if found.last_error is not None
            else None
        ),
        "why": found.why,
        "cause": entry.cause if entry else None,
        "fix": entry.fix if entry else None,
        "retry": entry.retry if entry else None,
        "source": entry.source if entry else None,
    }


COMPLETED_TEXT = (
    "entry     none: the task completed (exit 0), so there is no failure to diagnose and no "
    "lesson to add"
)


def as_text(report: Report) -> str:
    """What a person reads: the task, the verdict, the answer and why, then what to do."""
    found, subject = report.diagnosis, report.subject
    lines = [f"task      {subject.ref}" + (f" ({subject.target})" if subject.target else "")]
    if subject.log:
        lines.append(f"log       {subject.log}" + ("" if subject.log_read else " (not found)"))
    for t in subject.tries:  # an attempt its executor ran again, as the refresh recorded it
        said = Evidence(state=t.state, exit_code=t.exit_code, reason=t.reason).describe()
        why = t.category + (f" ({t.entry})" if t.entry else "") if t.category else "unknown"
        lines.append(f"attempt   {t.attempt or '?'}: {said}; {why}")
    lines.append(f"verdict   {found.evidence.describe()}")
    if report.completed:
        lines.append(COMPLETED_TEXT)
        return "".join(safetext.plain_line(line) + "\n" for line in lines)
    entry = found.entry
    if entry is not None:
        lines.append(
            f"entry     {entry.id} ({entry.category})" + (f": {entry.title}" if entry.title else "")
        )
    elif found.category is not None:
        lines.append(f"category  {found.category} (no single entry)")
    else:
        lines.append("entry     unknown: no catalog entry explains this failure")
    lines.append(f"because   {found.why}")
    shown = [m for m in found.matches if entry is None or m.entry.id == entry.id][:3]
    for m in shown:
        lines.append(f"  line {m.line}: {m.text[:160]}")
    if entry is not None:
        lines += [f"cause     {entry.cause}", f"fix       {entry.fix}"]
        if entry.retry:
            lines.append(f"retry     {entry.retry}")
        if entry.source:
            lines.append(f"source    {entry.source}")
    else:
        if found.last_error is not None:
            lines.append(f"  line {found.last_error.number}: {found.last_error.text[:160]}")
        lines.append(f"signature {found.signature}")
        lines.append(
            "next      read the log; once understood, add an entry to failures.local.yaml, "
            "the campaign's own catalog (failures.yaml is the template's: docs/formats.md)"
        )
    lines.append(f"lesson    {report.lesson}")
    lines.append(f"  append it with: {report.lesson_command}")
    # Log lines, paths and the lesson quote a task's output: no escape reaches the terminal.
    return "".join(safetext.plain_line(line) + "\n" for line in lines)
