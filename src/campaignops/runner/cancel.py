"""`campaign cancel`: stop a recorded job, or some of its array tasks, through its backend.

Two steps, so the command can show what is about to be lost before losing it: ``prepare`` finds
the job in the ledger (by backend job id or ledger id), maps ``--targets`` to array task indexes
(task i runs ``targets[i]`` of the job's intent record) and reads the tail of each selected
task's log; ``cancel`` then makes ONE backend call (scancel, qdel, localexec cancel) and, once
the backend accepted it, appends a cancel record to the ledger. The job's state is not written
here: the next ``campaign status --refresh`` reads CANCELLED from the backend itself.
"""

from __future__ import annotations

import datetime as dt
import getpass
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.core.errors import CampaignError, UsageError
from campaignops.model import jobref, ledger
from campaignops.model import ledger_writer as lw
from campaignops.model.states import FINISHED

TAIL_LINES = 20
TAIL_BYTES = 256 * 1024  # 20 lines of a log are read from its end, never the whole file

Call = Callable[[Sequence[str]], scheduler.Call]


class CancelRefused(CampaignError):
    """The backend answered and did not cancel (the job ended meanwhile, or is not ours)."""

    exit_code = 1


@dataclass(frozen=True)
class TaskLog:
    target: str
    index: int | None  # the array task; None for a single job
    path: str  # relative to the campaign root
    tail: tuple[str, ...] | None  # its last lines; None when there is no log (yet)


@dataclass(frozen=True)
class Plan:
    """What ``cancel`` will do, worked out before anything is touched."""

    ledger_id: str
    job_id: str
    backend: str
    name: str
    targets: tuple[str, ...]  # the targets to cancel
    whole: bool  # every task of the job (one id), or single array tasks
    cancel_ids: tuple[str, ...]
    logs: tuple[TaskLog, ...]


@dataclass(frozen=True)
class Cancelled:
    plan: Plan
    by: str
    reason: str | None
    # The plan's logs, each with the tail the backend's cancel call brought where none was
    # here (a box task's log is on its box until a refresh sees it end).
    logs: tuple[TaskLog, ...] = ()


def actor() -> str:
    """Who is cancelling, as recorded: ``user@host``."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def find(history: ledger.Ledger, job: str) -> ledger.Job:
    """The recorded job whose ledger id or backend job id is ``job`` (one array task is
    cancelled with ``--targets``, not by its task id)."""
    found, index = jobref.resolve(history, job, readings=backends.task_refs)
    if index is not None:
        target = found.targets[index] if index < len(found.targets) else str(index)
        raise UsageError(
            message=f"{job!r} names one task of job {found.job_id or found.ledger_id}",
            hint=f"cancel it with: campaign cancel {found.job_id or found.ledger_id} "
            f"--targets {target}",
        )
    return found


def tail(path: Path, lines: int = TAIL_LINES) -> tuple[str, ...] | None:
    """The last ``lines`` lines of a log, read from its end; None when it does not exist."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    text = data.decode("utf-8", errors="replace").splitlines()
    if size > TAIL_BYTES and text:
        text = text[1:]  # the first line read is a partial one
    return tuple(text[-lines:])


def _indexes(job: ledger.Job, targets: Sequence[str]) -> list[tuple[str, int]]:
    known = job.targets
    unknown = [t for t in targets if t not in known]
    if unknown:
        raise UsageError(
            message=f"job {job.job_id} ({job.ledger_id}) does not run {', '.join(unknown)}",
            hint="its targets are: " + ", ".join(known),
        )
    wanted = set(targets) or set(known)
    return [(t, i) for i, t in enumerate(known) if t in wanted]


def prepare(*, root: Path, job: str, targets: Sequence[str] = ()) -> Plan:
    """Find ``job`` and work out the backend ids and the logs of the tasks to cancel."""
    found = find(ledger.read(root), job)
    job_id = found.job_id
    if job_id is None:
        why = found.error or "no job id was recorded (campaign status --refresh finds a lost one)"
        raise UsageError(
            message=f"ledger {found.ledger_id} holds no submitted job: {why}",
            hint="campaign status lists the recorded jobs",
        )
    if found.state in FINISHED:
        raise UsageError(
            message=f"job {job_id} ({found.ledger_id}) already ended {found.state}",
            hint="nothing to cancel; campaign status --refresh if you think it still runs",
        )
    name = found.backend or "local"
    be = backends.for_page(name, backends.page(root, name), root=root)
    chosen = _indexes(found, targets)
    array = len(found.targets) > 1
    whole = len(chosen) == len(found.targets)
    logs = []
    for target, index in chosen:
        task = index if array else None
        rel = be.log_path(job_id, name=found.text("name") or "", index=task)
        path = (root / rel).resolve()
        inside = path.is_relative_to(root.resolve())
        logs.append(
            TaskLog(target=target, index=task, path=rel, tail=tail(path) if inside else None)
        )
    return Plan(
        ledger_id=found.ledger_id,
        job_id=job_id,
        backend=name,
        name=found.text("name") or "",
        targets=tuple(t for t, _ in chosen),
        whole=whole,
        cancel_ids=(job_id,) if whole else tuple(be.task_id(job_id, i) for _, i in chosen),
        logs=tuple(logs),
    )


def cancel(
    *,
    root: Path,
    plan: Plan,
    by: str,
    reason: str | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Cancelled:
    """One backend call for the plan's ids; the cancel record once the backend accepted it."""
    page = backends.page(root, plan.backend)
    be = backends.for_page(plan.backend, page, root=root)
    try:
        answer = backends.calling(be, call)(be.cancel_argv(plan.cancel_ids))
    except scheduler.SchedulerRejected as exc:
        raise CancelRefused(
            message=f"{plan.backend} did not cancel {', '.join(plan.cancel_ids)}: {exc.message}",
            hint="campaign status --refresh shows whether it has ended meanwhile; a local job "
            "is cancelled from the checkout that submitted it",
        ) from None
    record = lw.cancel_record(
        ledger_id=plan.ledger_id,
        time=now(),
        job_id=plan.job_id,
        cancel_ids=plan.cancel_ids,
        targets=plan.targets,
        by=by,
        reason=reason,
    )
    lw.append(root, [record])
    kind = backends.kind_of(page)
    brought = kind.cancel_tails(answer.stdout, plan.job_id) if kind is not None else {}
    logs = tuple(_brought(log, brought) for log in plan.logs)
    return Cancelled(plan=plan, by=by, reason=reason, logs=logs)


def _brought(log: TaskLog, brought: Mapping[int, str]) -> TaskLog:
    """``log`` with the tail the cancel call brought for its task, where it had none."""
    text = brought.get(0 if log.index is None else log.index)
    if log.tail is not None or text is None:
        return log
    return replace(log, tail=tuple(text.splitlines()[-TAIL_LINES:]))
