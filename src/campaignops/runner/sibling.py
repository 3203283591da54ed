"""The no_sibling gate: no task of a wanted target is queued or running, at any stage, in any
array (two runs of one target write the same outputs), and the job names that tie a scheduler's
job to its target.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence

from campaignops.model import ledger_index
from campaignops.model.jobspec import JobState
from campaignops.model.jobspec import job_name as job_name  # the runner names jobs by it
from campaignops.model.ledger import Job
from campaignops.model.ledger_index import Index
from campaignops.model.states import FINISHED
from campaignops.runner.elsewhere import THERE
from campaignops.runner.request import Request
from campaignops.runner.verdict import Verdict
from campaignops.runner.verdict import listed as _listed
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import refuse as _refuse


def _name_target(name: str | None, campaign: str) -> str | None:
    # Campaign names have no dots, target ids may: <campaign>.<target>.<stage>.
    if not name or not name.startswith(campaign + "."):
        return None
    rest, _, stage = name[len(campaign) + 1 :].rpartition(".")
    return rest if rest and stage in ("smoke", "single", "production") else None


def _unresolved(job: Job) -> bool:
    """A submission whose outcome is not known: the scheduler may hold it (intent only, or the
    call timed out). It counts as live until status --refresh finds it or rules it out."""
    return not job.job_id and not job.error and job.state not in FINISHED


def held_targets(state: JobState, job: Job | None, campaign: str) -> set[str]:
    """The targets a live scheduler job holds: through the ledger, each live array task's own
    target (a job that reports no tasks holds all of them); else, a job this ledger does not
    know (another clone's), the target its name says."""
    if job is not None:
        if state.tasks and len(job.targets) > 1:
            return {job.targets[i] for i in state.tasks if 0 <= i < len(job.targets)}
        return set(job.targets)
    named = _name_target(state.name, campaign)
    return {named} if named else set()


def _clashes(
    active: Iterable[JobState], recorded: _Recorded, wanted: set[str], campaign: str
) -> tuple[list[str], list[str]]:
    """The live jobs of the scheduler's answer that hold a wanted target: how each is shown, and
    their ids."""
    clashes: list[str] = []
    live_ids: list[str] = []
    for state in active:
        if state.state in FINISHED:
            continue  # squeue lists finished jobs for MinJobAge; they hold nothing
        hit = held_targets(state, recorded.of(state.job_id), campaign) & wanted
        if hit:
            clashes.append(f"{state.job_id} ({state.state}, {_listed(hit)})")
            live_ids.append(state.job_id)
    return clashes, live_ids


def no_sibling(
    request: Request,
    *,
    active: Iterable[JobState] | None,
    jobs: Sequence[Job],
    unasked: str | None = None,
    job_of: Callable[[str], str] = str,
    elsewhere: Iterable[Job] = (),
    index: Index | None = None,
    live: Sequence[Job] | None = None,
) -> Verdict:
    """No task of the same target is queued or running, at any stage, in any array: two runs
    of one target write the same outputs. ``active`` is the one scheduler query's answer (live
    jobs with their live tasks; None: the scheduler could not be asked, ``unasked`` says why);
    a submission whose outcome is unknown counts as live. ``job_of``: the backend's job of an
    id (an array task's id, the array's), so a live task finds its recorded job. ``elsewhere``:
    unfinished local jobs another clone ran (runner.elsewhere), which no query here can see:
    named when they hold a wanted target, not counted (their end is recorded there, and would
    never come here). ``live``: the ledger's live jobs (ledger.live), else found in ``jobs``
    through the index."""
    gate = "no_sibling"
    if active is None:
        why = unasked or "the scheduler was not asked"
        return Verdict(gate=gate, passed=True, reason=f"not checked: {why}")
    wanted = set(request.targets)
    if live is None:
        live = [j for j in jobs if j.ledger_id in ledger_index.of(jobs, index).live]
    clashes, live_ids = _clashes(active, _Recorded(live, jobs, job_of), wanted, request.campaign)
    unknown = [j for j in live if _unresolved(j) and wanted & set(j.targets)]
    if unknown:
        clashes += [f"ledger {j.ledger_id} (outcome unknown)" for j in unknown]
    away = [
        f"{j.job_id} ({_listed(wanted & set(j.targets))})"
        for j in elsewhere
        if wanted & set(j.targets)
    ]
    if not clashes:
        if away:
            return _ok(
                gate,
                "no task of these targets is queued or running here; not asked, submitted from "
                f"another clone to its machine's local backend: {_listed(away)} ({THERE})",
            )
        return _ok(gate, "no task of these targets is queued or running")
    hint = (
        "run campaign status --refresh: it finds what became of a submission whose outcome "
        "is unknown; then submit again"
        if unknown
        else "wait for it (campaign status --refresh), or read its log and cancel it "
        f"(campaign cancel {shlex.quote(live_ids[0])}), then submit again"
    )
    return _refuse(gate, f"already queued or running: {_listed(clashes)}", hint)


class _Recorded:
    """The recorded job of a scheduler's job id: looked up among the ledger's live jobs first
    (a job still queued is almost always one the ledger has not seen end), and among every
    job only when that fails, so the cost follows the live jobs, not the history."""

    def __init__(self, live: Sequence[Job], jobs: Sequence[Job], job_of: Callable[[str], str]):
        self._job_of = job_of
        self._live = {job_of(j.job_id): j for j in live if j.job_id}
        self._jobs = jobs
        self._all: dict[str, Job] | None = None

    def of(self, job_id: str) -> Job | None:
        key = self._job_of(job_id)
        found = self._live.get(key)
        if found is not None:
            return found
        if self._all is None:
            self._all = {self._job_of(j.job_id): j for j in self._jobs if j.job_id}
        return self._all.get(key)
