"""The six gates a submission passes, in order: committed, authorized, smoke_first, no_sibling,
breaker, budget (DESIGN §6; budget's logic is in runner/budget.py).

Each gate is a pure function of explicit facts returning a Verdict that says what is wrong,
where, and what to do. ``repo_facts`` is the one place that reads git; the scheduler query and
the ledger are read by the caller and passed in, so every gate can be tested on plain values.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from campaignops.backends import registry
from campaignops.core.errors import CampaignError
from campaignops.model import backendpage, ledger_index, pagefit
from campaignops.model.jobspec import JobState, Resources
from campaignops.model.jobspec import job_name as job_name  # the runner names jobs by it
from campaignops.model.ledger import Job
from campaignops.model.ledger_index import Index
from campaignops.model.ledger_index import signature_of as signature_of  # re-exported
from campaignops.model.policy import Policy
from campaignops.model.states import FINISHED
from campaignops.runner.budget import budget
from campaignops.runner.committed import committed as committed  # re-exported
from campaignops.runner.elsewhere import THERE
from campaignops.runner.gitfacts import RepoFacts
from campaignops.runner.request import Request as Request  # re-exported: submit, tests
from campaignops.runner.verdict import Verdict as Verdict  # re-exported: submit, cli
from campaignops.runner.verdict import listed as _listed
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import quoted as _quoted
from campaignops.runner.verdict import refuse as _refuse

GATES = ("committed", "authorized", "smoke_first", "no_sibling", "breaker", "budget")
BREAKER_RUN = 3  # the seed's "3 consecutive same-error failures"


class GateRefused(CampaignError):
    """A gate refused the submission: nothing was submitted."""

    exit_code = 1

    def __init__(self, *, verdict: Verdict) -> None:
        super().__init__(message=f"{verdict.gate}: {verdict.reason}", hint=verdict.hint)
        self.verdict = verdict

    def details(self) -> Mapping[str, object]:
        return {"gate": self.verdict.gate, "reason": self.verdict.reason}


def authorized(
    backend: str,
    *,
    policy: Policy,
    page: Mapping[str, Any] | None,
    partition: str | None = None,
    queue: str | None = None,
    resources: Resources | None = None,
) -> Verdict:
    """The backend is one the policy lists, the partition or queue asked for is on its page
    (``partitions`` or ``queues``: PBS pages list queues in either; a name may repeat), and
    ``resources`` fit its row (model/pagefit.py: time limit, node counts)."""
    gate = "authorized"
    page_path = backendpage.path_of(backend)
    if backend not in policy.backends:
        known = ", ".join(policy.backends) or "none"
        return _refuse(
            gate,
            f"backend {backend!r} is not in campaign.yaml's backends ({known})",
            f"use --backend with one of them, or add {backend} to backends in campaign.yaml "
            f"with a page {page_path}, and commit",
        )
    if page is None:
        return _refuse(
            gate,
            f"{page_path} is missing",
            f"copy backends/TEMPLATE.md to {page_path}, fill in its facts, and commit",
        )
    asked = resources or Resources(partition=partition, queue=queue)
    for misfit in pagefit.misfits(asked, page, page_path=page_path):
        where = "" if misfit.key in pagefit.PLACES else f"resources.{misfit.key}: "
        return _refuse(gate, where + misfit.problem, misfit.fix)
    asked_for = ", ".join(f"{k} {v}" for k, v in (("partition", partition), ("queue", queue)) if v)
    where = f"; {asked_for} listed" if asked_for else ""
    return _ok(gate, f"backend {backend} authorized{where}")


def smoked_targets(
    fingerprints: Mapping[str, str], jobs: Sequence[Job], index: Index | None = None
) -> frozenset[str]:
    """Targets with a smoke of their current config whose own task COMPLETED with exit 0.

    Each target is judged by its own array task and its own recorded fingerprint: a failed
    sibling in the same array does not spoil it, and an edited target needs its own new smoke.
    (A record without per-target fingerprints, from before the hardware class and the named
    files joined the fingerprint, can match no current one: such smokes must be run again.)
    Asked of the ledger's per-target index (``index``, else built from ``jobs``): the cost
    follows the targets asked about, not the jobs in the history.
    """
    found = ledger_index.of(jobs, index)
    return frozenset(t for t, fp in fingerprints.items() if found.smoked(t, fp) is not None)


def smoke_first(
    request: Request,
    *,
    fingerprints: Mapping[str, str],
    jobs: Sequence[Job],
    require_smoke: bool,
    index: Index | None = None,
) -> Verdict:
    """single/production need, for each target, a smoke of its current fingerprint in which
    its own task COMPLETED with exit 0; a smoke itself must fit stages.smoke_max_minutes."""
    gate = "smoke_first"
    if request.stage == "smoke":
        too_long = pagefit.smoke_too_long(request.time_s, request.smoke_max_minutes)
        if too_long is not None:
            return _refuse(gate, too_long.problem, too_long.fix)
        return _ok(gate, "a smoke needs no earlier smoke")
    if not require_smoke:
        return _ok(gate, "stages.require_smoke is false")
    found = ledger_index.of(jobs, index)
    asked = {t: fingerprints[t] for t in request.targets if t in fingerprints}
    done = smoked_targets(asked, jobs, found)
    missing = [t for t in request.targets if t not in done]
    if not missing:
        return _ok(gate, "every target has a completed smoke of its current config")
    older = {t for t in missing if found.smoked(t, None) is not None}
    stale = f" (smokes of {_listed(older)} ran an older config)" if older else ""
    if request.hardware_gap:
        return _refuse(
            gate,
            f"no smoke can unlock {request.stage} for {_listed(missing)}: "
            f"{request.hardware_gap}{stale}",
            HARDWARE_HINT.format(page=backendpage.path_of(request.backend)),
        )
    return _refuse(
        gate,
        f"no smoke of the current config COMPLETED with exit 0 for {_listed(missing)}{stale}",
        f"campaign submit {shlex.quote(request.manifest)} --targets {_quoted(missing)} "
        "--stage smoke; when campaign status --refresh shows it COMPLETED, submit again",
    )


HARDWARE_HINT = (
    "smoke on the production hardware (smoke.resources: its partition, gpu_type), or, where "
    "the smoke's partition is a slice of the production one (a MIG slice, a debug QoS on the "
    "same nodes), say so on the smoke row of {page}: smoke_for: <production partition>, with "
    "the source that says so; then smoke again"
)


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


def tripped(last: Sequence[ledger_index.Attempt]) -> str | None:
    """The breaker's rule on a target's last finished attempts (oldest first): the signature
    when there are BREAKER_RUN of them, none passed, and all failed with one signature."""
    sigs = {a.signature for a in last}
    passed = any(a.outcome == ledger_index.PASSED for a in last)
    return str(sigs.pop()) if len(last) == BREAKER_RUN and not passed and len(sigs) == 1 else None


def tripped_run(
    target: str, ordered: Sequence[Job], fingerprint: str | None
) -> tuple[str, tuple[str, ...]] | None:
    """The breaker's rule for one target over ``ordered`` (jobs in submission order): the
    signature and the ledger ids of the attempts, else None. campaign report asks it too (a
    stuck target); the gate asks the ledger's own index."""
    named = _Named(ordered)
    last = Index.build(ordered).finished(target, fingerprint, BREAKER_RUN, named.order)
    sig = tripped(last)
    return None if sig is None else (sig, tuple(a.ledger_id for a in last))


def breaker(
    request: Request,
    *,
    jobs: Sequence[Job],
    fingerprints: Mapping[str, str] | None = None,
    fixes: Mapping[str, str] | None = None,
    index: Index | None = None,
) -> Verdict:
    """Refuse when a target's last three finished attempts of its current config failed with
    one signature (the diagnosis: a catalog entry, else the normalised last error line):
    resubmitting the same crash burns allocation. Each attempt is the target's own task (a
    sibling's failure in the same array is not this target's); only attempts recorded with the
    target's current fingerprint count, so a fix (a new fingerprint) starts a new count.
    CANCELLED and preempted attempts are skipped (a person or the scheduler stopped them; they
    say nothing about the config).
    ``fixes`` (catalog entry → fix) goes into the hint. ``request.override`` passes it, and
    the verdict carries the reason for the ledger. The attempts come from the ledger's
    per-target index (``index``, else built from ``jobs``)."""
    gate = "breaker"
    found = ledger_index.of(jobs, index)
    named = _Named(jobs)
    refused: list[str] = []
    advice: list[str] = []
    for target in request.targets:
        current = (fingerprints or {}).get(target)
        last = found.finished(target, current, BREAKER_RUN, named.order)
        sig = tripped(last)
        if sig is not None:
            ids = ", ".join(named.shown(a.ledger_id) for a in last)
            refused.append(f"{target} ({sig}; jobs {ids})")
            fix = (fixes or {}).get(sig)
            if fix and f"{sig}: {fix}" not in advice:
                advice.append(f"{sig}: {fix}")
    if not refused:
        return _ok(gate, "no run of same-signature failures")
    why = f"failed {BREAKER_RUN} times in a row with the same signature: {_listed(refused)}"
    override = (request.override or "").strip()
    if override:
        return Verdict(gate=gate, passed=True, reason=f"overridden: {why}", override=override)
    known = f"the catalog's fix for {'; '.join(advice)}; " if advice else ""
    return _refuse(
        gate,
        why,
        f"{known}fix the cause (campaign diagnose JOB_TASK reads the log; FAILURES.md lists "
        "known ones), commit, and re-smoke: a changed config starts a new count. To submit "
        'the same config anyway, pass --override "what changed" (recorded in the ledger)',
    )


class _Named:
    """The jobs by ledger id, made only when a question needs them (a tripped breaker's
    message, the order of attempts from several configs)."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self._jobs = jobs
        self._by_id: dict[str, Job] | None = None

    def _get(self, ledger_id: str) -> Job | None:
        if self._by_id is None:
            self._by_id = {j.ledger_id: j for j in self._jobs}
        return self._by_id.get(ledger_id)

    def shown(self, ledger_id: str) -> str:
        job = self._get(ledger_id)
        return (job.job_id if job is not None else None) or ledger_id

    def order(self, ledger_id: str) -> Any:
        job = self._get(ledger_id)
        assert job is not None, "the index names only the jobs it was made of"
        return job.sort_key()


def evaluate(
    request: Request,
    *,
    repo: RepoFacts,
    policy: Policy,
    require_smoke: bool,
    page: Mapping[str, Any] | None,
    fingerprints: Mapping[str, str],
    jobs: Sequence[Job],
    active: Sequence[JobState] | None,
    fixes: Mapping[str, str] | None = None,
    unasked: str | None = None,
    elsewhere: Sequence[Job] = (),
    index: Index | None = None,
    live: Sequence[Job] | None = None,
) -> tuple[Verdict, ...]:
    """Every gate's verdict, in order (--dry-run shows them all; submit stops at the first).
    ``unasked``: why ``active`` is None (a dry run on a machine that cannot reach the backend);
    ``elsewhere``: other clones' unfinished local jobs (no_sibling); ``index``: the ledger's
    per-target index of ``jobs`` (built from them when None), ``live`` its live jobs."""
    index = ledger_index.of(jobs, index)
    return (
        committed(repo, paths=request.paths, policy=policy),
        authorized(
            request.backend,
            policy=policy,
            page=page,
            partition=request.partition,
            queue=request.queue,
            resources=request.resources,
        ),
        smoke_first(
            request,
            fingerprints=fingerprints,
            jobs=jobs,
            require_smoke=require_smoke,
            index=index,
        ),
        no_sibling(
            request,
            active=active,
            jobs=jobs,
            unasked=unasked,
            elsewhere=elsewhere,
            job_of=_job_of(page),
            index=index,
            live=live,
        ),
        breaker(request, jobs=jobs, fingerprints=fingerprints, fixes=fixes, index=index),
        budget(request, policy=policy, page=page, jobs=jobs),
    )


def _job_of(page: Mapping[str, Any] | None) -> Callable[[str], str]:
    kind = registry.kind_of(page)
    return kind.job_of if kind is not None else str


def require(verdicts: Iterable[Verdict]) -> None:
    """Raise GateRefused for the first refusal (exit 1: the gate, why, what to do)."""
    for verdict in verdicts:
        if not verdict.passed:
            raise GateRefused(verdict=verdict)
