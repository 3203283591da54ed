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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import charging
from campaignops.backends import command as scheduler
from campaignops.backends import registry as backends
from campaignops.checks import manifests as man_checks
from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.model import catalog, ledger
from campaignops.model import ledger_writer as lw
from campaignops.model import policy as policy_mod
from campaignops.model.manifest import targets as manifest_targets
from campaignops.runner import dispatch, gates, gitfacts, inputs, named, plan
from campaignops.runner.recording import Warned, after_submission
from campaignops.runner.submitlock import held

JOBS_DIR = dispatch.JOBS_DIR
Submitted = dispatch.Submitted
Retry = dispatch.Retry
Planned = dispatch.Planned
Preflight = dispatch.Preflight
# What a dry run's script shows where the ledger id and commit will go: a syntactically valid
# id and commit, so every backend's validator accepts the preview.
PREVIEW_LEDGER_ID = "L00000000T000000Z-000000000000"
PREVIEW_COMMIT = "0" * 40

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


class CatalogFixes(Mapping[str, str]):
    """failures.yaml's fix per entry id, read only if the breaker trips and asks (a catalog
    that does not parse gives none: campaign check reports it)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._fixes: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._fixes is None:
            try:
                entries = catalog.load(self._root).entries
            except CampaignError:
                entries = ()
            self._fixes = {e.id: e.fix for e in entries if e.fix}
        return self._fixes

    def __getitem__(self, key: str) -> str:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


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


def _reach(be: backends.Backend, name: str, call: Call, *, dry_run: bool) -> tuple[Any, str | None]:
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


def _page_if_named(root: Path, policy: policy_mod.Policy, name: object) -> dict[str, Any] | None:
    """The page of an authorized backend ``name``, or None (not a name, not authorized, or a
    page that cannot be read: the gates after the MAN check say why)."""
    if not isinstance(name, str) or name not in policy.backends:
        return None
    try:
        return backends.page(root, backends.checked_name(name))
    except CampaignError:
        return None


def preflight(*, root: Path, ask: Ask, call: Call = scheduler.call) -> Preflight | None:
    """Plan the submission and judge it; None when ``failed`` finds nothing to resubmit."""
    manifest, stage, targets, backend = ask.manifest, ask.stage, ask.targets, ask.backend
    after, dry_run, override, failed = ask.after, ask.dry_run, ask.override, ask.failed
    if backend is not None:
        backends.checked_name(backend)  # before anything reads backends/{backend}.md
    _, policy_doc = _yaml(root, layout.POLICY_FILE)
    policy = policy_mod.from_data(policy_doc)
    if layout.QUEUE in layout.kinds_of(manifest, policy.globs):
        raise UsageError(
            message=f"{manifest} is a queue file; campaign submit takes a manifest",
            hint=f"write a manifest with 'queue: {manifest}' and 'default_cmd: bash "
            "scripts/run_one.v1.sh' (manifests/example-queue.yaml is one), commit, submit that",
        )
    text, doc = _yaml(root, manifest)
    # Where the job would go, for the MAN check only (the box keys run on a box): the manifest
    # is not validated yet, so a backend it names that is no usable name is simply not a box.
    going = policy_mod.backend_for(policy, stage, doc, asked=backend)
    going_page = _page_if_named(root, policy, going)
    going_kind = backends.kind_of(going_page)
    boxes = frozenset({going}) if going_kind is not None and going_kind.box_keys else frozenset()
    problems = list(
        man_checks.check_document(
            manifest,
            doc,
            yamldoc.Locator(text),
            authorized=set(policy.backends),
            boxes=boxes,
            backend=going,
            hosts=man_checks.gpu_hosts({going: going_page}),
        )
    )
    if problems:
        first = problems[0]
        raise UsageError(
            message=f"{manifest}:{first.line}:{first.col}: {first.id} {first.message}",
            hint="fix the manifest first: campaign check " + manifest,
        )
    name = going
    page_rel = backends.page_path(name)
    page = backends.page(root, name) if name in policy.backends else None
    # An unlisted backend or a missing page is the authorized gate's refusal, even under
    # --dry-run: with no backend there is no script to show.
    gates.require((gates.authorized(name, policy=policy, page=page),))
    be = backends.for_page(name, page, root=root)
    cells, configs = (
        inputs.queue_cells(root, doc["queue"]) if isinstance(doc.get("queue"), str) else ((), {})
    )
    history = ledger.read(root)
    only = list(targets)
    if failed:
        every = [t.id for t in manifest_targets(doc, cells)]
        only = failed_targets(history.jobs, stage, only or every)
        if not only:
            return None
    jobs = plan.plan(
        doc=doc,
        manifest_path=manifest,
        stage=stage,
        policy=policy,
        workdir=str(root),
        only=only,
        cells=cells,
    )
    if after:
        chained = dataclasses.replace(jobs[0].spec, after=(after,))
        jobs = [dataclasses.replace(jobs[0], spec=chained), *jobs[1:]]
    fps = inputs.fingerprints(
        doc=doc,
        cells=cells,
        configs=configs,
        stage=stage,
        page=page,
        root=root,
        targets=[t for j in jobs for t in j.targets],
        manifest_path=manifest,
    )
    tasks = [t for j in jobs for t in j.spec.tasks]
    wrappers = inputs.wrappers_in(tasks, root)
    queue_files = tuple(
        r for r in layout.walk(root) if layout.QUEUE in layout.kinds_of(r, policy.globs)
    )
    if isinstance(doc.get("queue"), str) and doc["queue"] not in queue_files:
        queue_files = (*queue_files, doc["queue"])
    paths = (
        manifest,
        layout.POLICY_FILE,
        page_rel,
        *wrappers,
        *queue_files,
        *configs,
        *named.files_named(tasks, root),
    )
    repo = gitfacts.repo_facts(root, paths)
    active, unreachable = _reach(be, name, backends.calling(be, call), dry_run=dry_run)
    fixes = CatalogFixes(root)
    planned: list[Planned] = []
    earlier = 0.0  # phases are judged together: the budget counts the ones before
    for job in jobs:
        request = gates.Request(
            campaign=policy.name,
            manifest=manifest,
            stage=stage,
            backend=name,
            targets=job.targets,
            paths=paths,
            partition=job.spec.resources.partition,
            queue=job.spec.resources.queue,
            override=override,
            time_s=job.spec.time_s,
            smoke_max_minutes=policy.smoke_max_minutes,
            resources=job.spec.resources,
            earlier_cost=earlier,
        )
        earlier += (
            charging.estimate(job.spec.resources, len(job.targets), job.spec.time_s, page) or 0.0
        )
        verdicts = gates.evaluate(
            request,
            repo=repo,
            policy=policy,
            require_smoke=policy.require_smoke,
            page=page,
            fingerprints=fps,
            jobs=history.jobs,
            active=active,
            fixes=fixes,
            unasked=unreachable and f"this machine cannot reach backend {name} ({unreachable})",
        )
        comment = f"{PREVIEW_LEDGER_ID} {repo.head or PREVIEW_COMMIT}"
        preview = dataclasses.replace(job.spec, comment=comment)
        planned.append(Planned(job=job, verdicts=verdicts, script=be.render(preview)))
    return Preflight(
        root=root,
        name=name,
        backend=be,
        policy=policy,
        manifest=manifest,
        stage=stage,
        planned=tuple(planned),
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
        pre = preflight(root=root, ask=ask, call=call)
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
