"""campaign pull and campaign release, over the ledger: which cells to pull, the records written,
and the teardown rule.

The teardown rule (remote-gpu-trainer seed): a rented box is let go only after every cell that
ran on it was pulled home and verified. ``release`` refuses until the ledger says so for each
of the instance's cells, then prints the instance's configured stop or destroy command (and
runs it with ``--yes``), and records that. Nothing here is ever run automatically.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import base as backends
from campaignops.backends.ssh import instances as sshinstances
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import pull, roster
from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import CampaignError, UsageError
from campaignops.model import ledger, ledger_snapshot, ledger_writer

RELEASE_TIMEOUT_S = 600.0


class Refused(CampaignError):
    """A release the teardown rule does not allow yet (exit 1, like a refused gate)."""

    exit_code = 1


@dataclass(frozen=True)
class Pulled:
    cells: tuple[pull.Cell, ...]

    @property
    def ok(self) -> bool:
        looked = [c for c in self.cells if c.verdict not in (pull.NOT_FINISHED,)]
        return bool(looked) and all(c.verified for c in looked)


def _jobs(root: Path) -> list[ledger.Job]:
    return list(ledger_snapshot.read(root).jobs)


def superseded(jobs: Sequence[ledger.Job]) -> set[tuple[str, int]]:
    """The cells (ledger id, index) that a later placed job at the same stage ran again (its
    target's newer attempt: ``submit --failed`` after a fix). The newer attempt is the cell's
    outcome, as everywhere else (ledger.latest_attempts): the older one is neither pulled with
    every job nor in the way of a release."""
    latest: dict[tuple[str, str], tuple[str, int]] = {}
    older: set[tuple[str, int]] = set()
    placed = (j for j in jobs if j.job_id and j.record.get("placement"))
    for job in sorted(placed, key=ledger.Job.sort_key):
        for index, target in enumerate(job.targets):
            key = (job.stage or "", target)
            if key in latest:
                older.add(latest[key])
            latest[key] = (job.ledger_id, index)
    return older


def _shares(jobs: Sequence[ledger.Job], job: str | None) -> list[pull.Placed]:
    shares = pull.placements(jobs)
    if job is None:  # every job: each cell's newest attempt only
        older = superseded(jobs)
        shares = [
            dataclasses.replace(s, indices=kept)
            for s in shares
            if (kept := tuple(i for i in s.indices if (s.ledger_id, i) not in older))
        ]
        return shares
    shares = [s for s in shares if job in (s.job_id, s.ledger_id)]
    if not shares:
        raise UsageError(
            message=f"no ssh job {job!r} in the ledger",
            hint="campaign status lists the jobs; pull takes an ssh backend's job id",
        )
    return shares


def run_pull(
    root: Path,
    *,
    job: str | None,
    verify: str | None,
    now: dt.datetime,
    call: pull.Call = sshlink.call,
    run: pull.Run = subprocess.run,
    step: Callable[[str], None] = lambda _: None,
) -> Pulled:
    """Pull every ssh job's finished cells (or ``job``'s), record each verdict, and return them
    (``step``: told each call and transfer as it starts)."""
    jobs = _jobs(root)
    shares = _shares(jobs, job)
    if not shares:
        return Pulled(cells=())
    targets = {j.ledger_id: j.targets for j in jobs}
    if verify is not None:
        roster.verify_argv(verify, ())  # a bad command is refused before anything is copied
    cells = pull.pull(root, shares, targets, verify=verify, call=call, run=run, step=step)
    records = pull.records(cells, time=now)
    if records:
        ledger_writer.append(root, records)
    return Pulled(cells=tuple(cells))


@dataclass(frozen=True)
class Release:
    instance: Instance
    backend: str
    cells: int
    command: str | None
    ran: bool
    exit_code: int | None


def _pulled(job: ledger.Job, index: int) -> str | None:
    tasks = job.record.get("tasks")
    fields: Any = tasks.get(str(index)) if isinstance(tasks, dict) else None
    value = fields.get("pulled") if isinstance(fields, dict) else None
    return value if isinstance(value, str) else None


def blocking(jobs: Sequence[ledger.Job], instance: str) -> tuple[list[str], int]:
    """What keeps ``instance`` from being released (one line per cell), and its cell count."""
    by_id = {j.ledger_id: j for j in jobs}
    older = superseded(jobs)
    lines: list[str] = []
    count = 0
    for share in pull.placements(jobs):
        if share.instance.name != instance:
            continue
        job = by_id[share.ledger_id]
        names = job.targets
        for index in share.indices:
            if (share.ledger_id, index) in older:
                continue  # a later job ran the cell again: that attempt is what must be home
            count += 1
            verdict = _pulled(job, index)
            if verdict != pull.VERIFIED:
                name = names[index] if index < len(names) else f"#{index}"
                said = verdict or "not pulled"
                lines.append(f"{share.job_id}_{index} ({name}): {said}")
    return lines, count


def _instance(root: Path, jobs: Sequence[ledger.Job], name: str) -> tuple[str, Instance]:
    """The instance by name, with its page entry (for the release command) when there is one."""
    placed = {s.instance.name: (j.backend or "", s) for j in jobs for s in pull.placements([j])}
    if name not in placed:
        known = ", ".join(sorted(placed)) or "none yet"
        raise UsageError(
            message=f"no job ran on an instance named {name!r} (instances with jobs: {known})",
            hint="campaign release takes an instance name from the ssh backend page's instances",
        )
    backend, share = placed[name]
    for entry in sshinstances.of_page(root, backend, backends.page(root, backend)):
        if entry.name == name:
            return backend, entry
    return backend, share.instance


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def release(
    root: Path,
    *,
    instance: str,
    yes: bool,
    now: dt.datetime,
    run: Runner = subprocess.run,
    dry_run: bool = False,
) -> Release:
    """The teardown rule for one instance; Refused while any of its cells is not verified.
    ``dry_run``: the same verdict and command, nothing run and nothing recorded."""
    jobs = _jobs(root)
    backend, box = _instance(root, jobs, instance)
    lines, count = blocking(jobs, instance)
    # A placement the page does not vouch for was never pulled: it holds the box, and says why.
    _, refused = pull.reach(root, [s for s in pull.placements(jobs) if s.instance.name == instance])
    notes = "".join(f"\n  {exc.message}" for exc in refused.values())
    if lines or notes:
        shown = "\n  ".join(lines[:20]) + (
            f"\n  … and {len(lines) - 20} more" if len(lines) > 20 else ""
        )
        raise Refused(
            message=f"instance {instance}: {len(lines)} of {count} cells are not pulled and "
            f"verified:\n  {shown}{notes}",
            hint="run campaign pull (with --verify CMD to load each result); a cell that "
            "failed or whose output is missing: campaign submit MANIFEST --stage S --failed"
            + (
                "; a placement the page does not vouch for: campaign check --select POLICY006 "
                "says what to do"
                if notes
                else ""
            ),
        )
    if dry_run:
        return Release(box, backend, count, box.release, False, None)
    ran, exit_code = _run_release(instance, box.release, run) if yes else (False, None)
    records = [
        ledger_writer.release_record(
            ledger_id=s.ledger_id,
            time=now,
            instance=instance,
            indices=s.indices,
            command=box.release,
            ran=ran,
            exit_code=exit_code,
        )
        for s in pull.placements(jobs)
        if s.instance.name == instance
    ]
    ledger_writer.append(root, records)
    return Release(box, backend, count, box.release, ran, exit_code)


def _run_release(instance: str, command: str | None, run: Runner) -> tuple[bool, int | None]:
    """Run the page's release command (none: nothing ran): whether it ran, its exit code."""
    if not command:
        return False, None
    try:
        done = run(shlex.split(command), capture_output=True, text=True, timeout=RELEASE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CampaignError(
            message=f"instance {instance}: {command!r} did not run: {exc}",
            hint="run the provider's command by hand; nothing was recorded",
        ) from None
    return True, done.returncode
