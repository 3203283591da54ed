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
from campaignops.model import backendpage
from campaignops.model.jobspec import JobState
from campaignops.model.ledger import Job, Task
from campaignops.model.policy import Policy
from campaignops.model.states import FINISHED, STATE_CATEGORIES
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


def _names(page: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("partitions", "queues"):
        entries = page.get(key)
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                out.append(entry["name"])
    return out


def authorized(
    backend: str,
    *,
    policy: Policy,
    page: Mapping[str, Any] | None,
    partition: str | None = None,
    queue: str | None = None,
) -> Verdict:
    """The backend is one the policy lists, and the partition or queue asked for is on its page
    (``partitions`` or ``queues``: PBS pages list queues in either; a name may repeat)."""
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
    names = _names(page)
    for kind, asked in (("partition", partition), ("queue", queue)):
        if asked is not None and asked not in names:
            known = ", ".join(dict.fromkeys(names)) or "none listed"
            return _refuse(
                gate,
                f"{kind} {asked!r} is not on {page_path} ({known})",
                f"use one of them in the manifest's resources, or add {asked} to the page's "
                "partitions (with its source and verified date) and commit",
            )
    asked_for = ", ".join(f"{k} {v}" for k, v in (("partition", partition), ("queue", queue)) if v)
    where = f"; {asked_for} listed" if asked_for else ""
    return _ok(gate, f"backend {backend} authorized{where}")


def smoke_passed(job: Job, target: str, fingerprint: str | None) -> bool:
    """``job`` is a smoke in which ``target``'s own task COMPLETED with exit 0, of the config
    ``fingerprint`` names (the target's own recorded fingerprint)."""
    if job.stage != "smoke" or fingerprint is None:
        return False
    task = job.task(target)
    return task is not None and task.succeeded and job.target_fingerprint(target) == fingerprint


def smoked_targets(fingerprints: Mapping[str, str], jobs: Iterable[Job]) -> frozenset[str]:
    """Targets with a smoke of their current config whose own task COMPLETED with exit 0.

    Each target is judged by its own array task and its own recorded fingerprint: a failed
    sibling in the same array does not spoil it, and an edited target needs its own new smoke.
    (A record without per-target fingerprints, from before the hardware class and the named
    files joined the fingerprint, can match no current one: such smokes must be run again.)
    """
    done: set[str] = set()
    for job in jobs:
        if job.stage != "smoke":
            continue
        for target in job.targets:
            if target in fingerprints and smoke_passed(job, target, fingerprints[target]):
                done.add(target)
    return frozenset(done)


def smoke_first(
    request: Request, *, fingerprints: Mapping[str, str], jobs: Iterable[Job], require_smoke: bool
) -> Verdict:
    """single/production need, for each target, a smoke of its current fingerprint in which
    its own task COMPLETED with exit 0; a smoke itself must fit stages.smoke_max_minutes."""
    gate = "smoke_first"
    if request.stage == "smoke":
        limit, cap = request.time_s, request.smoke_max_minutes
        if limit is not None and cap is not None and limit > cap * 60:
            return _refuse(
                gate,
                f"the smoke's time limit is {limit // 60} min ({limit} s), over "
                f"stages.smoke_max_minutes {cap} in campaign.yaml",
                "cut the run length (smoke.args) and the smoke's time (smoke.resources.time) "
                f"to fit {cap} minutes: a smoke is there to fail fast",
            )
        return _ok(gate, "a smoke needs no earlier smoke")
    if not require_smoke:
        return _ok(gate, "stages.require_smoke is false")
    jobs = list(jobs)
    done = smoked_targets(fingerprints, jobs)
    missing = [t for t in request.targets if t not in done]
    if not missing:
        return _ok(gate, "every target has a completed smoke of its current config")
    older = {
        t
        for j in jobs
        if j.stage == "smoke"
        for t in j.targets
        if t in missing and (task := j.task(t)) is not None and task.succeeded
    }
    stale = f" (smokes of {_listed(older)} ran an older config)" if older else ""
    return _refuse(
        gate,
        f"no smoke of the current config COMPLETED with exit 0 for {_listed(missing)}{stale}",
        f"campaign submit {shlex.quote(request.manifest)} --targets {_quoted(missing)} "
        "--stage smoke; when campaign status --refresh shows it COMPLETED, submit again",
    )


def job_name(campaign: str, target: str, stage: str) -> str:
    return f"{campaign}.{target}.{stage}"


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


def no_sibling(
    request: Request,
    *,
    active: Iterable[JobState] | None,
    jobs: Iterable[Job],
    unasked: str | None = None,
    job_of: Callable[[str], str] = str,
    elsewhere: Iterable[Job] = (),
) -> Verdict:
    """No task of the same target is queued or running, at any stage, in any array: two runs
    of one target write the same outputs. ``active`` is the one scheduler query's answer (live
    jobs with their live tasks; None: the scheduler could not be asked, ``unasked`` says why);
    a submission whose outcome is unknown counts as live. ``job_of``: the backend's job of an
    id (an array task's id, the array's), so a live task finds its recorded job. ``elsewhere``:
    unfinished local jobs another clone ran (runner.elsewhere), which no query here can see:
    named when they hold a wanted target, not counted (their end is recorded there, and would
    never come here)."""
    gate = "no_sibling"
    if active is None:
        why = unasked or "the scheduler was not asked"
        return Verdict(gate=gate, passed=True, reason=f"not checked: {why}")
    wanted = set(request.targets)
    jobs = list(jobs)
    by_id = {job_of(j.job_id): j for j in jobs if j.job_id}
    clashes: list[str] = []
    live_ids: list[str] = []
    for state in active:
        if state.state in FINISHED:
            continue  # squeue lists finished jobs for MinJobAge; they hold nothing
        hit = held_targets(state, by_id.get(job_of(state.job_id)), request.campaign) & wanted
        if hit:
            clashes.append(f"{state.job_id} ({state.state}, {_listed(hit)})")
            live_ids.append(state.job_id)
    unknown = [j for j in jobs if _unresolved(j) and wanted & set(j.targets)]
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


def signature_of(job: Job, target: str | None = None) -> str:
    """The recorded signature (the target's task's, else the job's), else the state and exit
    code (a failure never analysed)."""
    task = job.task(target) if target is not None else None
    if task is not None and task.state is not None:
        code = task.exit_code
        return task.signature or f"{task.state}:{'-' if code is None else code}"
    code = job.exit_code
    return job.text("signature") or f"{job.state}:{'-' if code is None else code}"


def counts_for_breaker(task: Task | None) -> bool:
    """Whether an attempt says anything about its config: a finished task, neither CANCELLED
    (a person stopped it) nor preempted (the scheduler took its node back)."""
    if task is None or not task.finished or task.state == "CANCELLED":
        return False
    preempted = STATE_CATEGORIES["PREEMPTED"]
    return STATE_CATEGORIES.get(task.state or "") != preempted and task.category != preempted


def tripped_run(
    target: str, ordered: Sequence[Job], fingerprint: str | None
) -> tuple[str, tuple[Job, ...]] | None:
    """The breaker's rule for one target: (the signature, the jobs) when its last BREAKER_RUN
    finished attempts with ``fingerprint`` (None: any) all failed with one signature, else
    None. ``ordered``: jobs in submission order. campaign report asks it too (a stuck target)."""
    attempts = []
    for job in ordered:
        task = job.task(target)
        if task is None or not counts_for_breaker(task):
            continue
        if fingerprint is not None and job.target_fingerprint(target) != fingerprint:
            continue
        attempts.append((job, task))
    last = attempts[-BREAKER_RUN:]
    sigs = {signature_of(j, target) for j, _ in last}
    if len(last) == BREAKER_RUN and not any(t.succeeded for _, t in last) and len(sigs) == 1:
        return sigs.pop(), tuple(j for j, _ in last)
    return None


def breaker(
    request: Request,
    *,
    jobs: Iterable[Job],
    fingerprints: Mapping[str, str] | None = None,
    fixes: Mapping[str, str] | None = None,
) -> Verdict:
    """Refuse when a target's last three finished attempts of its current config failed with
    one signature (the diagnosis: a catalog entry, else the normalised last error line):
    resubmitting the same crash burns allocation. Each attempt is the target's own task (a
    sibling's failure in the same array is not this target's); only attempts recorded with the
    target's current fingerprint count, so a fix (a new fingerprint) starts a new count.
    CANCELLED and preempted attempts are skipped (a person or the scheduler stopped them; they
    say nothing about the config).
    ``fixes`` (catalog entry → fix) goes into the hint. ``request.override`` passes it, and
    the verdict carries the reason for the ledger."""
    gate = "breaker"
    ordered = sorted(jobs, key=Job.sort_key)
    tripped: list[str] = []
    advice: list[str] = []
    for target in request.targets:
        run = tripped_run(target, ordered, (fingerprints or {}).get(target))
        if run is not None:
            sig, last = run
            ids = ", ".join(j.job_id or j.ledger_id for j in last)
            tripped.append(f"{target} ({sig}; jobs {ids})")
            fix = (fixes or {}).get(sig)
            if fix and f"{sig}: {fix}" not in advice:
                advice.append(f"{sig}: {fix}")
    if not tripped:
        return _ok(gate, "no run of same-signature failures")
    why = f"failed {BREAKER_RUN} times in a row with the same signature: {_listed(tripped)}"
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
) -> tuple[Verdict, ...]:
    """Every gate's verdict, in order (--dry-run shows them all; submit stops at the first).
    ``unasked``: why ``active`` is None (a dry run on a machine that cannot reach the backend);
    ``elsewhere``: other clones' unfinished local jobs (no_sibling)."""
    return (
        committed(repo, paths=request.paths, policy=policy),
        authorized(
            request.backend,
            policy=policy,
            page=page,
            partition=request.partition,
            queue=request.queue,
        ),
        smoke_first(request, fingerprints=fingerprints, jobs=jobs, require_smoke=require_smoke),
        no_sibling(
            request,
            active=active,
            jobs=jobs,
            unasked=unasked,
            elsewhere=elsewhere,
            job_of=_job_of(page),
        ),
        breaker(request, jobs=jobs, fingerprints=fingerprints, fixes=fixes),
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
