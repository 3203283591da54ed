"""What a user asks `campaign submit` for (Ask), and the submission read from the campaign for
it: the policy, the manifest (refused at its first MAN finding), the backend and its page, the
planned jobs, the files they name, the hardware gaps and the targets' fingerprints. The
preflight (runner/submit.py) judges what this reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import registry as backends
from campaignops.checks import manifest_runs as man_runs
from campaignops.checks import manifests as man_checks
from campaignops.core import layout, yamldoc
from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.model import ledger, named
from campaignops.model import policy as policy_mod
from campaignops.model.manifest import phases as manifest_phases
from campaignops.model.manifest import targets as manifest_targets
from campaignops.runner import gates, inputs, plan


def read_yaml(root: Path, rel: str) -> tuple[str, Any]:
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


def page_if_named(root: Path, policy: policy_mod.Policy, name: str) -> dict[str, Any] | None:
    """The page of an authorized backend ``name``, or None (not authorized, not a name, or a
    page that cannot be read: the gates after the MAN check say why)."""
    if name not in policy.backends:
        return None
    try:
        return backends.page(root, backends.checked_name(name))
    except CampaignError:
        return None


def read_policy(root: Path, manifest: str) -> policy_mod.Policy:
    """campaign.yaml, refusing a queue file where a manifest is asked for."""
    _, policy_doc = read_yaml(root, layout.POLICY_FILE)
    policy = policy_mod.from_data(policy_doc)
    if layout.QUEUE in layout.kinds_of(manifest, policy.globs):
        raise UsageError(
            message=f"{manifest} is a queue file; campaign submit takes a manifest",
            hint=f"write a manifest with 'queue: {manifest}' and 'default_cmd: bash "
            "scripts/run_one.v1.sh' (manifests/example-queue.yaml is one), commit, submit that",
        )
    return policy


def checked_manifest(root: Path, ask: Ask, policy: policy_mod.Policy) -> tuple[Any, str]:
    """The manifest (refused at its first MAN finding) and the backend the job goes to."""
    text, doc = read_yaml(root, ask.manifest)
    going = policy_mod.backend_for(policy, ask.stage, doc, asked=ask.backend)
    # Where the job goes matters to the MAN check (the box keys run on a box): the manifest
    # is not validated yet, so a backend it names that is no usable name is simply not a box.
    going_page = page_if_named(root, policy, going)
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


def backend_of(
    root: Path, name: str, policy: policy_mod.Policy
) -> tuple[dict[str, Any] | None, backends.Backend]:
    """The backend's page and the backend itself. An unlisted backend or a missing page is
    the authorized gate's refusal, even under --dry-run: with no backend there is no script."""
    page = backends.page(root, name) if name in policy.backends else None
    gates.require((gates.authorized(name, policy=policy, page=page),))
    return page, backends.for_page(name, page, root=root)


def planned_jobs(
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


def named_files(
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


def hardware_gaps(
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
    smoke_page = page if smoke == going else page_if_named(root, policy, smoke)
    phases = {p.name for p in manifest_phases(doc)}
    groups = {j.group: (j.group if j.group in phases else None) for j in jobs}
    return inputs.hardware_gaps(
        doc, groups, stage=ask.stage, going=(going, page), smoke=(smoke, smoke_page)
    )


def fingerprints_of(
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
