"""What the MAN checks say about keys the schema accepts: run, not run yet, or not runnable.

The manifest schema accepts the experiment-queue format unchanged; a key the runner does not
run must not pass silently (a setting that is ignored reads as a promise kept). This module
finds, in a schema-valid manifest, each such key, each precondition the rendered script could
not check, and each output path it could not check inside the campaign. ``manifests.py`` turns
them into findings (MAN012, MAN013, MAN014).
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from campaignops.model import manifest
from campaignops.model.taskfiles import (
    ENV_REF,
    PRECONDITION_TYPES,
    TASK_PLACEHOLDER,
    fill_placeholders,
    output_problem,
    path_problem,
)

Where = tuple[str | int, ...]


@dataclass(frozen=True)
class NotRun:
    what: str  # what the runner does instead
    when: str  # which issue runs it, or why never
    fix: str


_BOX = "only a box executor runs it: an ssh backend's, or the local one's with a GPU list"
_NO_ISSUE = "no issue plans it yet"
# Top-level keys. Remove an entry in the change that makes the runner honour the key.
# Those the box executor runs are findings only where the manifest's backend is not an ssh one,
# nor the local one running it with a GPU list (local_box).
BOX_KEYS = frozenset({"conda", "conda_hook", "gpu_free_threshold_mib"})
# ``ssh:`` names one instance of an ssh backend's page: run there only (checks/manifest_runs.py).
SSH_KEYS = BOX_KEYS | {"ssh"}
NOT_RUN: Mapping[str, NotRun] = MappingProxyType(
    {
        "cwd": NotRun(
            "every task runs from the campaign checkout",
            "by design: the checkout is the commit that was submitted",
            "remove it (or write cwd: .); cd inside the command if a task needs another directory",
        ),
        "conda": NotRun(
            "no conda environment is activated on a scheduler or this machine",
            _BOX,
            "set backend: to an ssh backend, or activate it in the command (conda run -n ENV …)",
        ),
        "conda_hook": NotRun(
            "no conda hook is sourced on a scheduler or this machine",
            _BOX,
            "set backend: to an ssh backend, or source the hook in a wrapper script",
        ),
        "ssh": NotRun(
            "tasks run on the manifest's backend, never on an SSH host named here",
            "by design: an ssh backend's page lists its instances",
            "name an authorized backend in backend: (an ssh backend for a GPU box)",
        ),
        "gpu_free_threshold_mib": NotRun(
            "GPU memory is not polled before a task starts on a scheduler or this machine",
            _BOX,
            "set backend: to an ssh backend, or remove it (a scheduler gives each task its GPUs)",
        ),
        "analyze_on_complete": NotRun(
            "nothing is analysed when the jobs end",
            _NO_ISSUE,
            "run the analysis yourself once campaign status shows the jobs completed",
        ),
        "stage": NotRun(
            "the stage is chosen by campaign submit --stage",
            "by design: one manifest serves smoke, single and production",
            "remove it and pass --stage",
        ),
    }
)
# Keys of a job or a template that plan.py does not read.
NESTED_NOT_RUN: Mapping[str, NotRun] = MappingProxyType(
    {
        "resources": NotRun(
            "the targets of one array job share its resources: the manifest's, then its "
            "phase's (smoke.resources for a smoke)",
            _NO_ISSUE,
            "move the resources to the top level or to the phase, or split the targets into "
            "their own manifest",
        ),
        "backend": NotRun(
            "every target runs on the manifest's backend (or campaign submit --backend)",
            _NO_ISSUE,
            "put the job in a manifest of its own with that backend",
        ),
    }
)


def _asks_nothing(key: str, value: Any) -> bool:
    """Values that ask for what the runner does anyway."""
    if key == "cwd":
        return isinstance(value, str) and posixpath.normpath(value) == "."
    if key == "analyze_on_complete":
        return value is False
    return False


def page_gpus(page: Mapping[str, Any] | None) -> tuple[int, ...] | None:
    """The GPU indices a ``kind: local`` page's front matter lists (``gpus: [0, 1]``), or None
    (no list, or GPU model names)."""
    found = (page or {}).get("gpus")
    if not isinstance(found, list) or not found:
        return None
    if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in found):
        return None
    return tuple(found)


def local_box(doc: Mapping[str, Any], *, page_lists_gpus: bool) -> bool:
    """Whether the local backend runs this manifest under the box executor, which runs
    BOX_KEYS (campaignops.backends.local.gpu.gpu_list, as seen before planning): the manifest
    lists GPUs (``gpus: [0, 1]``), or the local page lists them and the manifest asks for GPUs
    at its top level (``gpus: N`` or ``resources.gpus``). GPUs asked for only by a phase or by
    smoke resources do not count here: the key is then refused though it might run."""
    gpus = doc.get("gpus")
    if isinstance(gpus, list) and gpus:
        return True
    if not page_lists_gpus:
        return False
    resources = doc.get("resources")
    asked = resources.get("gpus") if isinstance(resources, Mapping) else None
    return any(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (gpus, asked))


def not_run(
    doc: Mapping[str, Any], *, skip: frozenset[str] = frozenset()
) -> Iterator[tuple[Where, str, NotRun]]:
    """(where, the key as shown, why) for each key that asks for what the runner does not do,
    but those in ``skip`` (BOX_KEYS where a box executor runs them; SSH_KEYS where the caller
    judges them against the ssh backends)."""
    for key, why in NOT_RUN.items():
        if key in skip:
            continue  # run where the manifest goes, or judged there (manifest_runs.box_keys)
        if key in doc and not _asks_nothing(key, doc[key]):
            yield (key,), key, why
    for block in manifest.blocks(doc):
        owner = f"phase {block.phase!r}" if block.phase else None
        # A phase's own resources ARE run: a phase is one array job (plan.resources_for).
        if "resources" in block.template:
            shown = "template.resources" + (f" of {owner}" if owner else "")
            yield (*block.at, "template", "resources"), shown, NESTED_NOT_RUN["resources"]
        jobs_at: Where = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            for key in sorted(NESTED_NOT_RUN.keys() & job.keys()):
                shown = f"{key} of job {job['id']!r}"
                yield (*jobs_at, j, key), shown, NESTED_NOT_RUN[key]


PRECONDITION_FIX = (
    "write it as {{type: checkpoint_exists, path: checkpoints/teacher.pt}}; types: {types}"
)
PLACEHOLDER_FIX = (
    "use a name every target gives a value for: {keys} (e.g. {{{first}}}); the runner fills "
    "${{name}} and {{name}} per task from its grid values and args"
)


def task_values(target: manifest.Target) -> dict[str, Any]:
    """What fills a precondition's placeholders for ``target``: its args, then its grid cell."""
    return {**target.args, **target.cell}


def precondition_problems(doc: Mapping[str, Any]) -> Iterator[tuple[Where, str, str]]:
    """(where, problem, fix) for each precondition the rendered script could not check."""
    types = ", ".join(sorted(PRECONDITION_TYPES))
    general = PRECONDITION_FIX.format(types=types)
    for i, pre in enumerate(doc.get("preconditions") or ()):
        kind, path = pre.get("type"), pre.get("path")
        if kind not in PRECONDITION_TYPES:
            yield (
                ("preconditions", i, "type"),
                f"type {kind!r} is not one the runner checks",
                f"use one of: {types}",
            )
        if not isinstance(path, str):
            yield ("preconditions", i), f"{kind} has no path", general
            continue
        at: Where = ("preconditions", i, "path")
        problem = path_problem(path)
        if problem is not None:
            yield at, f"path {path!r} {problem}", general
        elif (unfilled := _unfilled(doc, path)) is not None:
            yield at, *unfilled


def _unfilled(doc: Mapping[str, Any], path: str) -> tuple[str, str] | None:
    """(problem, fix) for the first target that gives no value for a placeholder of ``path``
    (a grid key or an arg), or None."""
    if not TASK_PLACEHOLDER.search(path):
        return None
    targets = list(itertools.islice(manifest.targets(doc), manifest.MAX_TARGETS))
    for target in targets:
        _, missing = fill_placeholders(path, task_values(target))
        if missing:
            shared = set.intersection(*(set(task_values(t)) for t in targets))
            keys = ", ".join(sorted(shared)) or "(none: add a grid key or an arg to each)"
            return (
                f"path {path!r} reads {missing[0]!r}, which target {target.id!r} gives no "
                "value for (neither a grid key nor an arg of it)",
                PLACEHOLDER_FIX.format(keys=keys, first=min(shared) if shared else "seed"),
            )
    return None


def _not_env(text: str) -> str | None:
    for m in ENV_REF.finditer(text):
        if not manifest.ENV_NAME.match(m.group(1)):
            return m.group(1)
    return None


OUTPUT_FIX = (
    "write the one path the task writes, relative to the campaign (grid placeholders such as "
    "${{seed}} fill in per cell), e.g. ${{CAMPAIGN_OUT}}/{target}/metrics.json "
    "(CAMPAIGN_OUT is runs/<stage>)"
)
BOTH_FIX = "keep one of them: output (the experiment-queue's output_check means the same)"


def output_problem_of(target: manifest.Target) -> str | None:
    """What keeps the script from checking this target's output inside the campaign, or None.
    Where in the campaign it is written is the task's business: the script counts an output
    only if it is not older than the task (backends/script.py output_check), which keeps a
    stage's outputs its own (docs/decisions.md)."""
    if target.output is None:
        return None
    problem = output_problem(target.output)
    if problem is None and not target.cell and (name := _not_env(target.output)) is not None:
        # In a grid, an undefined lowercase name is MAN003's; in a job nothing fills it.
        problem = f"reads ${{{name}}}, which is neither a grid key nor an environment variable"
    return problem


def both_outputs(doc: Mapping[str, Any]) -> Iterator[Where]:
    """Where a job or template gives both output and output_check: only output is checked."""
    for block in manifest.blocks(doc):
        if {"output", "output_check"} <= block.template.keys():
            yield (*block.at, "template", "output_check")
        jobs_at: Where = (*block.at, "jobs") if block.phase else ("jobs",)
        for j, job in enumerate(block.jobs):
            if {"output", "output_check"} <= job.keys():
                yield (*jobs_at, j, "output_check")
