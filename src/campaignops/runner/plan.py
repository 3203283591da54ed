"""From a manifest and a stage to the jobs to submit: one JobSpec per phase (or one for all).

All selected targets of a phase fan out as ONE array job (one task per target); a phase waits
(afterok) for every phase in its ``depends_on``. A smoke is the same config with the run-length
args replaced by the manifest's `smoke.args` and its resources by `smoke.resources`. A target's
command is its `cmd` (or the manifest's `default_cmd`) exactly as written (spacing and lines
kept; one trailing newline of a YAML block dropped), followed by each arg as `--key value`,
shell-quoted, on its last line.

A manifest with a `queue` has the queue's cells as targets: the command is `default_cmd` (the
wrapper that runs one cell, `bash scripts/run_one.v1.sh`) followed by the line's fields in order
(`<cfg> <task> [epochs]`); a smoke may only shorten `epochs`.

Every task runs with ``CAMPAIGN_STAGE`` and ``CAMPAIGN_OUT=runs/<stage>`` in its environment:
outputs written under ``${CAMPAIGN_OUT}`` never meet another stage's, so a smoke's finished
cell can never make a production task "already complete".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from types import MappingProxyType
from typing import Any

from campaignops.core.errors import UsageError
from campaignops.core.layout import stage_root
from campaignops.model import manifest, walltime
from campaignops.model.jobspec import BoxSettings, JobSpec, Precondition
from campaignops.model.makeup import command as command  # re-exported: the task command
from campaignops.model.manifest_keys import task_values
from campaignops.model.policy import Policy
from campaignops.model.queuefile import Cell
from campaignops.model.stageresources import gpu_pool as gpu_pool  # re-exported
from campaignops.model.stageresources import resources_for as resources_for  # re-exported
from campaignops.model.taskfiles import TASK_PLACEHOLDER, fill_placeholders
from campaignops.runner import retry
from campaignops.runner.sibling import job_name

STAGES = ("smoke", "single", "production")
# Each stage's output root: run_one (and any resumable task) skips a cell it finds completed,
# so a smoke sharing production's directory would turn the production run into a no-op.
STAGE_VAR = "CAMPAIGN_STAGE"
OUT_VAR = "CAMPAIGN_OUT"


@dataclass(frozen=True)
class PlannedJob:
    """One submission: its spec, and which targets (with their commands) it runs."""

    spec: JobSpec
    group: str  # the phase name, or the manifest's stem when it has no phases
    targets: tuple[str, ...]
    after_groups: tuple[str, ...] = ()  # the phases this one waits for (afterok), if any


def preconditions(doc: Mapping[str, Any]) -> tuple[Precondition, ...]:
    """The manifest's preconditions, checked in the rendered script before each task."""
    found = doc.get("preconditions")
    listed = found if isinstance(found, list) else []
    return tuple(
        Precondition(type=str(p["type"]), path=str(p.get("path") or ""))
        for p in listed
        if isinstance(p, Mapping) and isinstance(p.get("type"), str)
    )


def _preconditions(doc: Mapping[str, Any], members: Sequence[manifest.Target]) -> dict[str, Any]:
    """JobSpec's preconditions: job-wide as written, or, where a path holds a task's own
    placeholders (``{N}``, ``${seed}``), one filled list per task (its grid values and args;
    MAN013 reports a name a target does not fill)."""
    found = preconditions(doc)
    if not any(TASK_PLACEHOLDER.search(p.path) for p in found):
        return {"preconditions": found}
    return {
        "task_preconditions": tuple(
            tuple(
                dataclasses.replace(p, path=fill_placeholders(p.path, task_values(t))[0])
                for p in found
            )
            for t in members
        )
    }


def box_settings(doc: Mapping[str, Any]) -> BoxSettings:
    """The keys only a box's executor runs (ssh backends), as the schema accepted them."""

    def text(key: str) -> str | None:
        value = doc.get(key)
        return value if isinstance(value, str) and value else None

    gpus = doc.get("gpus")
    listed = (
        tuple(g for g in gpus if isinstance(g, int) and not isinstance(g, bool))
        if isinstance(gpus, list)
        else None
    )
    threshold = doc.get("gpu_free_threshold_mib")
    rule = retry.policy_of(doc)
    return BoxSettings(
        gpus=listed or None,
        gpu_free_threshold_mib=threshold
        if isinstance(threshold, int) and not isinstance(threshold, bool)
        else None,
        conda=text("conda"),
        conda_hook=text("conda_hook"),
        instance=text("ssh"),
        oom_attempts=rule.max_attempts if rule else None,
        oom_delay_s=rule.delay_s if rule else None,
    )


def cost(args: Mapping[str, Any]) -> float:
    """A task's run length for dividing an array across boxes: its ``epochs`` (a queue line's
    field, or an arg), else 1 (every task alike)."""
    epochs = args.get("epochs")
    if isinstance(epochs, str) and epochs.isdigit():
        epochs = int(epochs)
    return (
        float(epochs)
        if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0
        else 1.0
    )


def max_parallel(doc: Mapping[str, Any], policy: Policy) -> int | None:
    """The array's %C: the manifest's max_parallel, else the policy's, never above the GPU
    pool a top-level ``gpus`` names."""
    asked = doc.get("max_parallel") or policy.max_parallel
    pool = gpu_pool(doc)
    return min(asked, pool) if asked and pool else (asked or pool or None)


def task(
    target: manifest.Target, doc: Mapping[str, Any], args: Mapping[str, Any], stage: str
) -> str:
    """The shell text of one array task: the target's command (its stage's output root comes
    from the job's environment, CAMPAIGN_OUT)."""
    del stage  # the root is in JobSpec.env: one place for every kind of target
    return command(target, doc, args)


def warning(policy_seconds: int | None, time: str | None) -> int | None:
    """The warning signal's lead, only where it falls inside the time limit: a warning longer
    than a short smoke's limit would fire at once and end the job it is meant to save."""
    limit = None if time is None else walltime.parse(time)
    if policy_seconds is None or limit is None or policy_seconds >= limit:
        return None
    return policy_seconds


def _selected(
    doc: Mapping[str, Any],
    manifest_path: str,
    stage: str,
    only: Sequence[str],
    cells: Sequence[Cell],
) -> list[manifest.Target]:
    """The manifest's targets ``only`` names (all when empty); an unknown id, or more than one
    target at stage single, is refused."""
    targets = list(manifest.targets(doc, cells))
    known = {t.id for t in targets}
    missing = [t for t in only if t not in known]
    if missing:
        raise UsageError(
            message=f"no target {', '.join(map(repr, missing))} in {manifest_path}",
            hint="targets are: " + ", ".join(sorted(known)[:20]),
        )
    if only:
        targets = [t for t in targets if t.id in set(only)]
    if stage == "single" and len(targets) > 1:
        raise UsageError(
            message=f"stage single runs one target; {len(targets)} selected",
            hint="pick one with --targets ID",
        )
    return targets


def _spec(
    doc: Mapping[str, Any],
    group: str,
    members: Sequence[manifest.Target],
    *,
    stage: str,
    policy: Policy,
    workdir: str,
) -> JobSpec:
    """One phase's job: one array task per target, at the stage's resources."""
    smoke = doc.get("smoke") or {}
    smoke_args = (smoke.get("args") or {}) if stage == "smoke" else {}
    tasks = tuple(task(t, doc, {**t.args, **smoke_args}, stage) for t in members)
    name = job_name(policy.name or "campaign", members[0].id if len(members) == 1 else group, stage)
    resources = resources_for(doc, members[0].phase, stage)
    return JobSpec(
        name=name,
        workdir=workdir,
        tasks=tasks,
        resources=resources,
        max_parallel=max_parallel(doc, policy),
        mail_user=policy.notify_email,
        warning_seconds=warning(policy.warning_seconds, resources.time),
        requeue=policy.requeue,
        env=MappingProxyType({STAGE_VAR: stage, OUT_VAR: stage_root(stage)}),
        outputs=tuple(t.output for t in members) if any(t.output for t in members) else (),
        **_preconditions(doc, members),
        box=dataclasses.replace(
            box_settings(doc),
            costs=tuple(cost({**t.args, **smoke_args}) for t in members),
        ),
    )


def plan(
    *,
    doc: Mapping[str, Any],
    manifest_path: str,
    stage: str,
    policy: Policy,
    workdir: str,
    only: Sequence[str] = (),
    cells: Sequence[Cell] = (),
) -> list[PlannedJob]:
    if stage not in STAGES:
        raise UsageError(message=f"unknown stage {stage!r}", hint="use smoke, single or production")
    targets = _selected(doc, manifest_path, stage, only, cells)
    stem = PurePosixPath(manifest_path).stem
    phase_deps = {p.name: p.depends_on for p in manifest.phases(doc)}
    groups: dict[str, list[manifest.Target]] = {}
    for t in targets:
        groups.setdefault(t.phase or stem, []).append(t)
    return _ordered(
        [
            PlannedJob(
                spec=_spec(doc, group, members, stage=stage, policy=policy, workdir=workdir),
                group=group,
                targets=tuple(t.id for t in members),
                after_groups=tuple(d for d in phase_deps.get(group, ()) if d in groups),
            )
            for group, members in groups.items()
        ]
    )


def with_configs(jobs: Sequence[PlannedJob], fingerprints: Mapping[str, str]) -> list[PlannedJob]:
    """The jobs with each task's config fingerprint, which its script exports as
    ${CAMPAIGN_CONFIG}: a resumable task that skips a finished cell compares it with the one
    it recorded, so a re-smoke after a config edit runs the cell again."""
    out = []
    for job in jobs:
        configs = tuple(fingerprints.get(t, "") for t in job.targets)
        out.append(dataclasses.replace(job, spec=dataclasses.replace(job.spec, configs=configs)))
    return out


def _ordered(jobs: list[PlannedJob]) -> list[PlannedJob]:
    """Every phase after the phases it waits for (its job id must exist when it is submitted);
    otherwise manifest order. Cycles never get here: MAN005 refuses them first."""
    done: set[str] = set()
    out: list[PlannedJob] = []
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if set(j.after_groups) <= done]
        if not ready:  # a cycle the checks let through: keep manifest order, wait for nothing
            ready = pending[:1]
        out.append(ready[0])
        done.add(ready[0].group)
        pending.remove(ready[0])
    return out
