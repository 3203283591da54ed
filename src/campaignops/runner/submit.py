"""`campaign submit`: a preflight (every gate's verdict and the scripts), then the execution.

``preflight`` is what ``--dry-run`` shows and what a real submission must pass; it asks the
scheduler once (the no_sibling query). ``submit`` runs both under the campaign-wide submit lock,
so two submits of one target cannot both pass no_sibling.

Order of writes for each job: the rendered script, an intent record, the scheduler call, a
result record (job id, error, or an unknown outcome). Once the scheduler accepted a job, what
follows (the wrapper lock, STATUS.md, the commit) can only warn: the job is queued and recorded.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.checks import manifest_runs as man_runs
from campaignops.checks import manifests as man_checks
from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.model import ledger
from campaignops.model import ledger_writer as lw
from campaignops.model import policy as policy_mod
from campaignops.model.jobspec import JobState
from campaignops.model.manifest import phases as manifest_phases
from campaignops.model.manifest import targets as manifest_targets
from campaignops.runner import (
    dispatch,
    elsewhere,
    gates,
    gitfacts,
    inputs,
    judging,
    named,
    plan,
    retry_mem,
)
from campaignops.runner.recording import Warned, after_submission
from campaignops.runner.submitlock import held

JOBS_DIR = dispatch.JOBS_DIR
Submitted = dispatch.Submitted
Retry = dispatch.Retry
Planned = dispatch.Planned
Preflight = dispatch.Preflight
Call = Callable[[Sequence[str]], scheduler.Call]


class BackendUnreachable(CampaignError):
    """This machine cannot reach the backend's scheduler (no command, no controller)."""

    exit_code = 2


@dataclass(frozen=True)
class Outcome:
    backend: str
    planned: tuple[Planned, ...]
    submitted: tuple[Submitted, ...] = ()
    commit: str | None = None
    warnings: tuple[Warned, ...] = ()
    unreachable: str | None = None  # dry run: why no_sibling was not checked
    note: str | None = None  # e.g. --failed with nothing to resubmit


def _yaml(root: Path, rel: str) -> tuple[str, Any]:
    path = root / rel
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path=rel, message=f"cannot read: {exc}", hint="check the path") from None
    return text, yamldoc.load(text, path=rel)


def failed_targets(jobs: Sequence[ledger.Job], stage: str, among: Sequence[str]) -> list[str]:
    """Targets (of ``among``) whose latest attempt at ``stage`` ended without success, or whose
    outputs campaign pull found missing, empty or different from the box's (ssh backends)."""
    latest = ledger.latest_attempts(jobs, stage)
    out = []
    for target in among:
        task = latest.get(target)
        if task is None or not task.finished:
            continue
        if not task.succeeded or task.pulled not in (None, "verified", "no-output"):
            out.append(target)
    return out


# The queue query names nothing the user chose (no partition, account or limit): a scheduler
# command that refuses it is one that cannot answer here, not a request to fix.
QUERY_REFUSED_HINT = (
    "the {program} here cannot answer for this backend: a client with no reachable controller "
    "or no configuration, or another scheduler's command of that name (Grid Engine's qstat for "
    "a PBS page); run this on the backend's submit host (its backend page says which), or "
    "submit to a backend this machine reaches (--backend local)"
)


def _reach(
    be: backends.Backend, name: str, call: Call, *, dry_run: bool
) -> tuple[tuple[JobState, ...] | None, str | None]:
    """The no_sibling query's answer (live jobs), or, in a dry run, None and why it failed:
    a scheduler that does not answer, is not installed, or refuses the query of its queue."""
    argv = be.sibling_argv(())
    try:
        return be.parse_live(call(argv).stdout), None
    except scheduler.SchedulerUnavailable as exc:
        why, hint = exc.message, exc.hint
    except scheduler.SchedulerRejected as exc:
        why, hint = exc.message, QUERY_REFUSED_HINT.format(program=scheduler.program(argv))
    if dry_run:
        return None, why
    raise BackendUnreachable(
        message=f"this machine cannot reach backend {name}: {why}",
        hint=f"{hint}; nothing was submitted",
    ) from None


@dataclass(frozen=True)
class Ask:
    """What a user asks ``campaign submit`` for (its arguments, as the CLI parsed them)."""

    manifest: str  # relative to the campaign root
    stage: str
    targets: tuple[str, ...] = ()  # none: every target of the manifest
    backend: str | None = None  # none: the manifest's, else smoke_backend, else the first
    after: str | None = None  # a job id the first phase waits for (afterok)
    dry_run: bool = False
    override: str | None = None  # the reason that passes a tripped breaker or budget
    failed: bool = False  # only the targets whose latest attempt at the stage failed


def _page_if_named(root: Path, policy: policy_mod.Policy, name: str) -> dict[str, Any] | None:
    """The page of an authorized backend ``name``, or None (not authorized, not a name, or a
    page that cannot be read: the gates after the MAN check say why)."""
    if name not in policy.backends:
        return None
    try:
        return backends.page(root, backends.checked_name(name))
    except CampaignError:
        return None


def _read_policy(root: Path, manifest: str) -> policy_mod.Policy:
    """campaign.yaml, refusing a queue file where a manifest is asked for."""
    _, policy_doc = _yaml(root, layout.POLICY_FILE)
    policy = policy_mod.from_data(policy_doc)
    if layout.QUEUE in layout.kinds_of(manifest, policy.globs):
        raise UsageError(
            message=f"{manifest} is a queue file; campaign submit takes a manifest",
            hint=f"write a manifest with 'queue: {manifest}' and 'default_cmd: bash "
            "scripts/run_one.v1.sh' (manifests/example-queue.yaml is one), commit, submit that",
        )
    return policy


def _checked_manifest(root: Path, ask: Ask, policy: policy_mod.Policy) -> tuple[Any, str]:
    """The manifest (refused at its first MAN finding) and the backend the job goes to."""
    text, doc = _yaml(root, ask.manifest)
    going = policy_mod.backend_for(policy, ask.stage, doc, asked=ask.backend)
    # Where the job goes matters to the MAN check (the box keys run on a box): the manifest
    # is not validated yet, so a backend it names that is no usable name is simply not a box.
    going_page = _page_if_named(root, policy, going)
    going_kind = backends.kind_of(going_page)
    boxes = (
        {going: man_runs.aliases(root, going, going_page)}
        if going_kind is not None and going_kind.box_keys
        else {}
    )
    problems = list(
        man_checks.check_document(
            ask.manifest,
            doc,
            yamldoc.Locator(text),
            authorized=set(policy.backends),
            boxes=boxes,
            backend=going,
            hosts=man_runs.gpu_hosts({going: going_page}),
            routes=(
                man_runs.Route(
                    ask.stage,
                    going,
                    going_page,
                    policy.smoke_max_minutes if ask.stage == "smoke" else None,
                ),
            ),
            policy=policy,
        )
    )
    if problems:
        first = problems[0]
        raise UsageError(
            message=f"{ask.manifest}:{first.line}:{first.col}: {first.id} {first.message}",
            hint="fix the manifest first: campaign check " + ask.manifest,
        )
    return doc, going


def _backend(
    root: Path, name: str, policy: policy_mod.Policy
) -> tuple[dict[str, Any] | None, backends.Backend]:
    """The backend's page and the backend itself. An unlisted backend or a missing page is
    the authorized gate's refusal, even under --dry-run: with no backend there is no script."""
    page = backends.page(root, name) if name in policy.backends else None
    gates.require((gates.authorized(name, policy=policy, page=page),))
    return page, backends.for_page(name, page, root=root)


def _jobs(
    root: Path,
    ask: Ask,
    *,
    doc: Any,
    policy: policy_mod.Policy,
    cells: Sequence[Any],
    history: ledger.Ledger,
) -> list[plan.PlannedJob] | None:
    """The planned jobs, the first chained after ``ask.after``; None when ``ask.failed`` finds
    no target to resubmit."""
    only = list(ask.targets)
    if ask.failed:
        every = [t.id for t in manifest_targets(doc, cells)]
        only = failed_targets(history.jobs, ask.stage, only or every)
        if not only:
            return None
    jobs = plan.plan(
        doc=doc,
        manifest_path=ask.manifest,
        stage=ask.stage,
        policy=policy,
        workdir=str(root),
        only=only,
        cells=cells,
    )
    if ask.after:
        chained = dataclasses.replace(jobs[0].spec, after=(ask.after,))
        jobs = [dataclasses.replace(jobs[0], spec=chained), *jobs[1:]]
    return jobs


def _files(
    root: Path,
    ask: Ask,
    *,
    name: str,
    doc: Any,
    policy: policy_mod.Policy,
    configs: Mapping[str, str],
    jobs: Sequence[plan.PlannedJob],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The wrappers the jobs run, and every file the submission names (for the committed gate):
    the manifest, the policy, the backend page, the wrappers, every queue file, the configs and
    the files the commands name."""
    tasks = [t for j in jobs for t in j.spec.tasks]
    wrappers = inputs.wrappers_in(tasks, root)
    queue_files = tuple(
        r for r in layout.walk(root) if layout.QUEUE in layout.kinds_of(r, policy.globs)
    )
    if isinstance(doc.get("queue"), str) and doc["queue"] not in queue_files:
        queue_files = (*queue_files, doc["queue"])
    paths = (
        ask.manifest,
        layout.POLICY_FILE,
        backends.page_path(name),
        *wrappers,
        *queue_files,
        *configs,
        *named.files_named(tasks, root),
    )
    return wrappers, paths


def _hardware_gaps(
    root: Path,
    ask: Ask,
    *,
    doc: Any,
    policy: policy_mod.Policy,
    jobs: Sequence[plan.PlannedJob],
    page: Mapping[str, Any] | None,
) -> dict[str, str]:
    """Each planned group whose smoke (where a smoke of this manifest goes) asks for another
    hardware class than this stage: the smoke_first gate says no smoke can unlock it."""
    if ask.stage == "smoke":
        return {}
    going = policy_mod.backend_for(policy, ask.stage, doc, asked=ask.backend)
    smoke = policy_mod.backend_for(policy, "smoke", doc)
    smoke_page = page if smoke == going else _page_if_named(root, policy, smoke)
    phases = {p.name for p in manifest_phases(doc)}
    groups = {j.group: (j.group if j.group in phases else None) for j in jobs}
    return inputs.hardware_gaps(
        doc, groups, stage=ask.stage, going=(going, page), smoke=(smoke, smoke_page)
    )


def _fingerprints(
    root: Path,
    ask: Ask,
    *,
    doc: Any,
    cells: Sequence[Any],
    configs: Mapping[str, str],
    page: Mapping[str, Any] | None,
    jobs: Sequence[plan.PlannedJob],
) -> dict[str, str]:
    """Each planned target's fingerprint (what the smoke gate and the ledger compare)."""
    return inputs.fingerprints(
        doc=doc,
        cells=cells,
        configs=configs,
        stage=ask.stage,
        page=page,
        root=root,
        targets=[t for j in jobs for t in j.targets],
        manifest_path=ask.manifest,
    )


def preflight(
    *, root: Path, ask: Ask, call: Call = scheduler.call, retry: Retry | None = None
) -> Preflight | None:
    """Plan the submission and judge it; None when ``failed`` finds nothing to resubmit."""
    if ask.backend is not None:
        backends.checked_name(ask.backend)  # before anything reads backends/{backend}.md
    policy = _read_policy(root, ask.manifest)
    doc, name = _checked_manifest(root, ask, policy)
    page, be = _backend(root, name, policy)
    cells, configs = (
        inputs.queue_cells(root, doc["queue"]) if isinstance(doc.get("queue"), str) else ((), {})
    )
    history = ledger.read(root)
    jobs = _jobs(root, ask, doc=doc, policy=policy, cells=cells, history=history)
    if jobs is None:
        return None
    jobs = retry_mem.for_retry(jobs, retry, page=page)  # a host OOM's: its memory raised
    fps = _fingerprints(root, ask, doc=doc, cells=cells, configs=configs, page=page, jobs=jobs)
    wrappers, paths = _files(
        root, ask, name=name, doc=doc, policy=policy, configs=configs, jobs=jobs
    )
    repo = gitfacts.repo_facts(root, paths)
    active, unreachable = _reach(be, name, backends.calling(be, call), dry_run=ask.dry_run)
    facts = judging.Facts(
        manifest=ask.manifest,
        stage=ask.stage,
        backend=name,
        override=ask.override,
        policy=policy,
        page=page,
        paths=paths,
        repo=repo,
        fingerprints=fps,
        history=history,
        active=active,
        unreachable=unreachable,
        fixes=judging.CatalogFixes(root),
        elsewhere=elsewhere.of(root, ledger.live(history)),
        hardware_gaps=_hardware_gaps(root, ask, doc=doc, policy=policy, jobs=jobs, page=page),
    )
    return Preflight(
        root=root,
        name=name,
        backend=be,
        page=page,
        policy=policy,
        manifest=ask.manifest,
        stage=ask.stage,
        planned=judging.judged(be, jobs, facts),
        fingerprints=fps,
        wrappers=wrappers,
        head=repo.head,
        unreachable=unreachable,
    )


def submit(
    *,
    root: Path,
    ask: Ask,
    commit: bool = False,
    retry: Retry | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
    call: Call = scheduler.call,
) -> Outcome:
    """Preflight and execute under the campaign's submit lock (a dry run: the preflight only)."""
    with held(root, wait=not ask.dry_run):
        pre = preflight(root=root, ask=ask, call=call, retry=retry)
        if pre is None:
            return Outcome(
                backend=ask.backend or "",
                planned=(),
                note=f"nothing to resubmit: no target's latest {ask.stage} ended without success",
            )
        if ask.dry_run:
            return Outcome(backend=pre.name, planned=pre.planned, unreachable=pre.unreachable)
        for p in pre.planned:
            gates.require(p.verdicts)
        lw.check_writable(root)
        done, stopped = dispatch.execute(
            pre, now=now, call=backends.submitting(pre.backend, call), retry=retry
        )
    if stopped is not None and not done:
        raise stopped
    sha, warnings = after_submission(
        root=root,
        wrappers=pre.wrappers,
        today=now().date(),
        submitted=done,
        commit=commit,
        push=pre.policy.require_pushed,
    )
    if stopped is not None:
        warnings = (*warnings, Warned(step="submit", message=stopped.message, hint=stopped.hint))
    return Outcome(
        backend=pre.name,
        planned=pre.planned,
        submitted=tuple(done),
        commit=sha,
        warnings=tuple(warnings),
    )
