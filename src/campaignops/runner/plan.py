"""From a manifest and a stage to the jobs to submit: one JobSpec per phase (or one for all).

All selected targets of a phase fan out as ONE array job (one task per target); phases chain
with afterok in manifest order. A smoke is the same config with the run-length args replaced by
the manifest's `smoke.args` and its resources by `smoke.resources`. A target's command is its
`cmd` (or the manifest's `default_cmd`) followed by each arg as `--key value`, shell-quoted.

A manifest with a `queue` has the queue's cells as targets: the command is `default_cmd` (the
wrapper that runs one cell, `bash scripts/run_one.v1.sh`) followed by the line's fields in order
(`<cfg> <task> [epochs]`); a smoke may only shorten `epochs`, and writes under `runs/smoke/`
(`CAMPAIGN_OUT`), so a later production never finds the smoke's cell "already completed".
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import PurePosixPath
from typing import Any

from campaignops import manifest, walltime
from campaignops.errors import UsageError
from campaignops.policy import Policy
from campaignops.queuefile import Cell
from campaignops.runner.gates import job_name
from campaignops.runner.spec import JobSpec, Resources

STAGES = ("smoke", "single", "production")
# Where a queue cell's smoke writes: run_one skips a cell whose cell.json says completed, so a
# smoke sharing production's directory would turn the production run into a no-op.
SMOKE_OUT = "runs/smoke"


@dataclass(frozen=True)
class PlannedJob:
    """One submission: its spec, and which targets (with their commands) it runs."""

    spec: JobSpec
    group: str  # the phase name, or the manifest's stem when it has no phases
    targets: tuple[str, ...]
    after_group: str | None  # the phase this one waits for (afterok), if any


def _resources(*layers: Mapping[str, Any] | None) -> Resources:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer or {})
    known = {f.name for f in fields(Resources)}
    return Resources(**{k: v for k, v in merged.items() if k in known})


def command(target: manifest.Target, doc: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    base = target.cmd or doc.get("default_cmd")
    if not isinstance(base, str) or not base.strip():
        raise UsageError(
            message=f"target {target.id!r} has no cmd and the manifest no default_cmd",
            hint="give the job or template a cmd, or the manifest a default_cmd",
        )
    if target.positional:
        extra = [k for k in args if k not in manifest.QUEUE_FIELDS]
        if extra:
            raise UsageError(
                message=f"queue cell {target.id!r}: smoke.args may only set epochs, not "
                + ", ".join(map(repr, extra)),
                hint="a queue line passes <cfg> <task> [epochs] to the wrapper; shorten the "
                "run with smoke.args: {epochs: N}",
            )
        fields = " ".join(shlex.quote(str(args[k])) for k in manifest.QUEUE_FIELDS if k in args)
        return " ".join(base.split()) + f" {fields}"
    flags = " ".join(f"--{k} {shlex.quote(str(v))}" for k, v in args.items())
    return " ".join(base.split()) + (f" {flags}" if flags else "")


def task(
    target: manifest.Target, doc: Mapping[str, Any], args: Mapping[str, Any], stage: str
) -> str:
    """The shell line of one array task: the target's command, and for a queue cell's smoke the
    output root that keeps it apart from production."""
    line = command(target, doc, args)
    return f"CAMPAIGN_OUT={SMOKE_OUT} {line}" if target.positional and stage == "smoke" else line


def warning(policy_seconds: int | None, time: str | None) -> int | None:
    """The warning signal's lead, only where it falls inside the time limit: a warning longer
    than a short smoke's limit would fire at once and end the job it is meant to save."""
    limit = None if time is None else walltime.parse(time)
    if policy_seconds is None or limit is None or policy_seconds >= limit:
        return None
    return policy_seconds


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
    smoke = doc.get("smoke") or {}
    smoke_args = (smoke.get("args") or {}) if stage == "smoke" else {}
    smoke_res = smoke.get("resources") if stage == "smoke" else None
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
    stem = PurePosixPath(manifest_path).stem
    phase_deps = {p.name: (p.depends_on[0] if p.depends_on else None) for p in manifest.phases(doc)}
    groups: dict[str, list[manifest.Target]] = {}
    for t in targets:
        groups.setdefault(t.phase or stem, []).append(t)
    jobs: list[PlannedJob] = []
    for group, members in groups.items():
        tasks = tuple(task(t, doc, {**t.args, **smoke_args}, stage) for t in members)
        name = job_name(
            policy.name or "campaign", members[0].id if len(members) == 1 else group, stage
        )
        resources = _resources(doc.get("resources"), smoke_res)
        spec = JobSpec(
            name=name,
            workdir=workdir,
            tasks=tasks,
            resources=resources,
            max_parallel=doc.get("max_parallel") or policy.max_parallel,
            mail_user=policy.notify_email,
            warning_seconds=warning(policy.warning_seconds, resources.time),
            requeue=policy.requeue,
        )
        dep = phase_deps.get(group)
        jobs.append(
            PlannedJob(
                spec=spec,
                group=group,
                targets=tuple(t.id for t in members),
                after_group=dep if dep in groups else None,
            )
        )
    return jobs
